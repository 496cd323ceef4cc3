// Ctrl-C: the first drains (no new starts), the second kills commands.
#include "child_process.hpp"

using namespace poolrun::test;

namespace {

/// Waits until `path` has at least `n` lines.
bool wait_for_lines(const std::string& path, size_t n,
                    std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (lines_of(read_file(path)).size() < n) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(10ms); // polling a file another process writes
  }
  return true;
}

} // namespace

TEST_CASE("first SIGINT at 2 workers: running commands finish, no new one "
          "starts, poolrun ends by SIGINT" *
          doctest::timeout(60)) {
  temp_dir tmp;
  std::string input;
  for (int n = 1; n <= 8; ++n)
    input +=
        "echo start >> starts; sleep 0.6; echo out " + std::to_string(n) + "\n";
  child_process run{poolrun_argv({"-j", "2"}), input, tmp.path};
  REQUIRE(wait_for_lines(tmp / "starts", 2, 20s));
  run.signal(SIGINT);
  auto status = run.wait(20s);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK(lines_of(run.out()).size() == 2);
  CHECK(lines_of(read_file(tmp / "starts")).size() == 2);
  CHECK(run.err().find("interrupted") != std::string::npos);
}

TEST_CASE("second SIGINT at 2 workers kills the running commands with the "
          "processes they started" *
          doctest::timeout(60)) {
  temp_dir tmp;
  std::string input;
  for (int n = 1; n <= 2; ++n)
    input += "sleep 30 & echo $! > grandchild" + std::to_string(n) +
             "; echo started >> starts; sleep 30; wait\n";
  child_process run{poolrun_argv({"-j", "2"}), input, tmp.path};
  REQUIRE(wait_for_lines(tmp / "starts", 2, 20s));
  auto started = std::chrono::steady_clock::now();
  run.signal(SIGINT);
  std::this_thread::sleep_for(100ms);
  run.signal(SIGINT);
  auto status = run.wait(20s);
  CHECK(std::chrono::steady_clock::now() - started < 5s);
  CHECK(WIFSIGNALED(status));
  CHECK(run.err().find("aborted: killed 2 running commands") !=
        std::string::npos);
  for (int n = 1; n <= 2; ++n) {
    auto pid = static_cast<pid_t>(
        std::stol(read_file(tmp / ("grandchild" + std::to_string(n)))));
    for (int i = 0; i < 50 && !process_gone(pid); ++i)
      std::this_thread::sleep_for(20ms);
    CHECK(process_gone(pid));
  }
}
