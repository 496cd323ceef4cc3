// --timeout: a slow command dies with its process group, counted failed.
#include "child_process.hpp"

using namespace poolrun::test;

namespace {

pid_t pid_in(const std::string& path) {
  auto text = read_file(path);
  REQUIRE_MESSAGE(!text.empty(), path << " is empty");
  return static_cast<pid_t>(std::stol(text));
}

} // namespace

TEST_CASE("timeout 300ms at 2 workers kills the command and the processes "
          "it started - and counts it as failed" *
          doctest::timeout(60)) {
  temp_dir tmp;
  auto input = std::string{"sleep 30 & echo $! > grandchild; echo started; "
                           "sleep 30; wait\n"
                           "echo quick\n"};
  // It would sleep 30 s: ending within the 20 s wait is the kill's doing.
  child_process run{poolrun_argv({"-j", "2", "--timeout", "300ms", "--joblog",
                                  tmp / "joblog"}),
                    input, tmp.path};
  CHECK(run.exit_code(20s) == 1);
  auto grandchild = pid_in(tmp / "grandchild");
  // SIGKILL is delivered at once, but give the kernel a moment to tear down.
  for (int i = 0; i < 50 && !process_gone(grandchild); ++i)
    std::this_thread::sleep_for(20ms);
  CHECK(process_gone(grandchild));
  // Output up to the kill is still printed, with a warning.
  auto out = lines_of(run.out());
  std::sort(out.begin(), out.end());
  CHECK(out == std::vector<std::string>{"quick", "started"});
  CHECK(run.err().find("timeout") != std::string::npos);
  // As GNU parallel logs a timed-out job: Exitval -1, and the signal.
  auto log = lines_of(read_file(tmp / "joblog"));
  REQUIRE(log.size() == 3);
  auto killed = log[1].rfind("1\t", 0) == 0 ? log[1] : log[2];
  CHECK(killed.find("\t-1\t9\tsleep 30 &") != std::string::npos);
}

TEST_CASE("timeout with retries 2 at 1 worker: two attempts - both killed - "
          "one failed command" *
          doctest::timeout(60)) {
  temp_dir tmp;
  child_process run{poolrun_argv({"-j", "1", "--timeout", "0.2", "--retries",
                                  "2", "--retry-delay", "10ms"}),
                    "echo try >> attempts; sleep 30\n", tmp.path};
  CHECK(run.exit_code(20s) == 1);
  CHECK(read_file(tmp / "attempts") == "try\ntry\n");
}

TEST_CASE("a command that finishes within its timeout is not affected" *
          doctest::timeout(60)) {
  temp_dir tmp;
  child_process run{poolrun_argv({"-j", "2", "--timeout", "5s"}),
                    "sleep 0.1; echo in time\n", tmp.path};
  CHECK(run.exit_code(20s) == 0);
  CHECK(run.out() == "in time\n");
}
