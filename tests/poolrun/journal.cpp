// --journal: a rerun after SIGKILL skips every command already printed.
#include "child_process.hpp"

#include <set>

using namespace poolrun::test;

namespace {

constexpr int command_count = 16;

/// Command n appends "start n" to `starts` when it begins and "done n" to
/// `dones` at its very end, then prints "out n".
std::string journal_commands() {
  std::string result;
  for (int n = 1; n <= command_count; ++n) {
    auto num = std::to_string(n);
    result += "echo start " + num + " >> starts; sleep 0.2; echo done " + num +
              " >> dones; echo out " + num + "\n";
  }
  return result;
}

size_t count_lines(const std::string& text) {
  return lines_of(text).size();
}

} // namespace

TEST_CASE("journal at 2 workers: SIGKILL in the middle - then a rerun runs "
          "every command at least once and none whose output was printed "
          "again" *
          doctest::timeout(120)) {
  temp_dir tmp;
  write_file(tmp / "commands", journal_commands());
  auto args = poolrun_argv({"-j", "2", "--journal", "journal.db", "-a", "commands"});
  // Run 1: killed once at least 5 commands were printed.
  std::multiset<int> printed;
  {
    child_process first{args, "", tmp.path};
    auto enough = [](const std::string& out) { return count_lines(out) >= 5; };
    REQUIRE(first.read_until(enough, 30s));
    first.signal(SIGKILL);
    auto status = first.wait(10s);
    CHECK(WIFSIGNALED(status));
    // Everything it printed before dying counts.
    printed = numbers_in(first.out());
  }
  REQUIRE(printed.size() >= 5);
  REQUIRE(printed.size() < command_count);
  // Commands that were running are orphaned and finish on their own.
  std::this_thread::sleep_for(600ms);
  auto starts_before = count_lines(read_file(tmp / "starts"));
  // Run 2: the same command line, to completion.
  child_process second{args, "", tmp.path};
  CHECK(second.exit_code(60s) == 0);
  auto rerun = numbers_in(read_file(tmp / "starts"), starts_before);
  CHECK(!rerun.empty());
  for (auto n : printed) {
    CHECK_MESSAGE(rerun.count(n) == 0,
                  "command " << n << " was printed, then ran again");
    CHECK_MESSAGE(second.out().find("out " + std::to_string(n) + "\n") ==
                      std::string::npos,
                  "command " << n << " printed twice");
  }
  // Every command ran to its end at least once; none more than twice (once
  // per run at most).
  auto dones = numbers_in(read_file(tmp / "dones"));
  for (int n = 1; n <= command_count; ++n) {
    CHECK_MESSAGE(dones.count(n) >= 1, "command " << n << " never finished");
    CHECK(numbers_in(read_file(tmp / "starts")).count(n) <= 2);
  }
  // Between the two runs no output was printed twice. (One may be missing:
  // recorded in the journal, but poolrun was killed before printing it;
  // --replay shows it, below.)
  auto all_printed = printed;
  for (auto n : numbers_in(second.out()))
    all_printed.insert(n);
  for (int n = 1; n <= command_count; ++n)
    CHECK(all_printed.count(n) <= 1);
  // Run 3: nothing left to do.
  auto starts_done = read_file(tmp / "starts");
  child_process third{args, "", tmp.path};
  CHECK(third.exit_code(30s) == 0);
  CHECK(third.out().empty());
  CHECK(read_file(tmp / "starts") == starts_done);
  // Run 4: --replay prints the recorded outputs, still running nothing.
  auto replay_args = poolrun_argv(
      {"-j", "2", "--journal", "journal.db", "--replay", "-k", "-a", "commands"});
  child_process fourth{replay_args, "", tmp.path};
  CHECK(fourth.exit_code(30s) == 0);
  std::string expected;
  for (int n = 1; n <= command_count; ++n)
    expected += "out " + std::to_string(n) + "\n";
  CHECK(fourth.out() == expected);
  CHECK(read_file(tmp / "starts") == starts_done);
}

TEST_CASE("journal at 2 workers: a recorded failure still counts in the "
          "exit status of a rerun - which does not run it again" *
          doctest::timeout(60)) {
  temp_dir tmp;
  write_file(tmp / "commands", "echo ran >> runs; exit 4\necho fine\n");
  auto args = poolrun_argv({"-j", "2", "--journal", "journal.db", "-a", "commands"});
  child_process first{args, "", tmp.path};
  CHECK(first.exit_code(30s) == 1);
  child_process second{args, "", tmp.path};
  CHECK(second.exit_code(30s) == 1);
  CHECK(second.out().empty());
  CHECK(read_file(tmp / "runs") == "ran\n");
}

TEST_CASE("journal at 2 workers: an edited line is a new command" *
          doctest::timeout(60)) {
  temp_dir tmp;
  write_file(tmp / "commands", "echo one\necho two\n");
  auto args = poolrun_argv({"-j", "2", "--journal", "journal.db", "-a", "commands"});
  child_process first{args, "", tmp.path};
  CHECK(first.exit_code(30s) == 0);
  write_file(tmp / "commands", "echo one\necho two, edited\n");
  child_process second{args, "", tmp.path};
  CHECK(second.exit_code(30s) == 0);
  CHECK(second.out() == "two, edited\n");
}
