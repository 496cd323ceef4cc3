// Ctrl-C: the first stops starting commands and waits, the second kills.
#include "child_process.hpp"

using namespace poolrun::test;

TEST_CASE("first SIGINT at 2 workers: running commands finish - no new one "
          "starts - poolrun ends by SIGINT" *
          doctest::timeout(60)) {
  temp_dir tmp;
  std::string input;
  for (int n = 1; n <= 8; ++n)
    input +=
        "echo start >> starts; sleep 0.6; echo out " + std::to_string(n) + "\n";
  child_process run{poolrun_argv({"-j", "2", "--joblog", "log"}), input,
                    tmp.path};
  REQUIRE(wait_for_lines(tmp / "starts", 2, 20s));
  run.signal(SIGINT);
  auto status = run.wait(20s);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK(lines_of(run.out()).size() == 2);
  CHECK(lines_of(read_file(tmp / "starts")).size() == 2);
  // The joblog has the two that ran, whole.
  CHECK(lines_of(read_file(tmp / "log")).size() == 3);
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
  run.signal(SIGINT);
  std::this_thread::sleep_for(100ms);
  run.signal(SIGINT);
  auto status = run.wait(20s);
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

TEST_CASE("SIGINT while standard input is still open ends the run" *
          doctest::timeout(60)) {
  temp_dir tmp;
  child_process run{poolrun_argv({"-j", "2", "echo", "{}"}), "one\n", tmp.path,
                    {}, true};
  REQUIRE(run.read_until([](const std::string& out) { return out == "one\n"; },
                         20s));
  run.signal(SIGINT);
  auto status = run.wait(20s);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
}

TEST_CASE("SIGINT with a journal: the rerun runs what had not started and "
          "nothing that was printed" *
          doctest::timeout(60)) {
  temp_dir tmp;
  std::string input;
  for (int n = 1; n <= 6; ++n)
    input += "echo " + std::to_string(n) +
             " >> starts; sleep 0.4; echo out " + std::to_string(n) + "\n";
  write_file(tmp / "commands", input);
  auto args = poolrun_argv({"-j", "2", "--journal", "j.db", "-a", "commands"});
  child_process first{args, "", tmp.path};
  REQUIRE(wait_for_lines(tmp / "starts", 2, 20s));
  first.signal(SIGINT);
  auto status = first.wait(20s);
  CHECK(WIFSIGNALED(status));
  auto printed = lines_of(first.out());
  CHECK(printed.size() == 2);
  child_process second{args, "", tmp.path};
  CHECK(second.exit_code(30s) == 0);
  // Every command ran once: the two of the first run, the rest now.
  CHECK(sorted_text(read_file(tmp / "starts")) == "1\n2\n3\n4\n5\n6\n");
  for (auto& line : printed)
    CHECK(second.out().find(line) == std::string::npos);
  CHECK(lines_of(second.out()).size() == 4);
}
