// --queue: several poolruns drain one command list from a shared
// PostgreSQL queue (a private server per test, tests/pg_fixture.hpp), each
// printing and logging what it ran; --enqueue; a rerun resumes.
#include "child_process.hpp"
#include "pg_fixture.hpp"

#include <set>

using namespace poolrun::test;

namespace {

constexpr int command_count = 40;

/// Command n appends "start n" to `starts`, then prints "out n"; command 7
/// then fails.
std::string queue_commands() {
  std::string result;
  for (int n = 1; n <= command_count; ++n) {
    auto num = std::to_string(n);
    result += "echo start " + num + " >> starts; sleep 0.1; echo out " + num +
              (n == 7 ? "; exit 3" : "") + "\n";
  }
  return result;
}

/// The Seq column of a joblog, header skipped.
std::set<int> joblog_seqs(const std::string& text) {
  std::set<int> result;
  auto lines = lines_of(text);
  for (size_t i = 1; i < lines.size(); ++i)
    result.insert(std::stoi(lines[i]));
  return result;
}

std::string url_of(const pool::test::pg_cluster& pg) {
  return "postgres://postgres@127.0.0.1:" + std::to_string(pg.port) +
         "/postgres";
}

} // namespace

TEST_CASE("two poolruns of one queue run each command once, and each prints "
          "and logs what it ran, and a rerun runs nothing" *
          doctest::timeout(120)) {
  pool::test::pg_cluster pg;
  temp_dir tmp;
  write_file(tmp / "commands", queue_commands());
  auto argv_for = [&](const std::string& log) {
    return poolrun_argv({"-j", "2", "--queue", url_of(pg), "--joblog", log,
                         "--summary", "-a", "commands"});
  };
  child_process a{argv_for("a.log"), "", tmp.path};
  child_process b{argv_for("b.log"), "", tmp.path};
  // One command failed, wherever it ran: both say so in their status.
  CHECK(a.exit_code(60s) == 1);
  CHECK(b.exit_code(60s) == 1);
  auto starts = numbers_in(read_file(tmp / "starts"));
  auto outs_a = numbers_in(a.out());
  auto outs_b = numbers_in(b.out());
  for (int n = 1; n <= command_count; ++n) {
    CHECK_MESSAGE(starts.count(n) == 1, "command " << n << " ran "
                                                   << starts.count(n)
                                                   << " times");
    CHECK_MESSAGE(outs_a.count(n) + outs_b.count(n) == 1,
                  "command " << n << " printed "
                             << outs_a.count(n) + outs_b.count(n) << " times");
  }
  // Both took part; each joblog has what that poolrun ran, no more.
  CHECK(!outs_a.empty());
  CHECK(!outs_b.empty());
  auto log_a = joblog_seqs(read_file(tmp / "a.log"));
  auto log_b = joblog_seqs(read_file(tmp / "b.log"));
  CHECK(log_a.size() == outs_a.size());
  CHECK(log_b.size() == outs_b.size());
  CHECK(log_a.size() + log_b.size() == command_count);
  for (auto seq : log_a)
    CHECK(log_b.count(seq) == 0);
  CHECK(a.err().find("ran elsewhere") != std::string::npos);
  // A rerun finds every command finished: nothing runs or prints, and the
  // recorded failure still counts.
  child_process again{argv_for("c.log"), "", tmp.path};
  CHECK(again.exit_code(60s) == 1);
  CHECK(again.out().empty());
  CHECK(numbers_in(read_file(tmp / "starts")).size() == command_count);
  CHECK(again.err().find("40 done in an earlier run, 1 of them failed") !=
        std::string::npos);
}

TEST_CASE("--enqueue adds the jobs once and runs nothing, a poolrun of the "
          "queue runs them, and bad settings are refused" *
          doctest::timeout(120)) {
  pool::test::pg_cluster pg;
  temp_dir tmp;
  write_file(tmp / "commands", queue_commands());
  auto enqueue = poolrun_argv(
      {"--queue", url_of(pg), "--queue-name", "q1", "--enqueue", "-a",
       "commands"});
  {
    child_process first{enqueue, "", tmp.path};
    CHECK(first.exit_code(60s) == 0);
    CHECK(first.err().find("40 jobs queued in 'q1', 0 were there already") !=
          std::string::npos);
    child_process second{enqueue, "", tmp.path};
    CHECK(second.exit_code(60s) == 0);
    CHECK(second.err().find("0 jobs queued in 'q1', 40 were there already") !=
          std::string::npos);
  }
  CHECK(read_file(tmp / "starts").empty());
  // Another queue name is another queue: nothing there.
  CHECK(pg.query("SELECT count(*) FROM pool.operations WHERE queue = 'q1'") ==
        "40");
  child_process run{poolrun_argv({"-j", "4", "--queue", url_of(pg),
                                  "--queue-name", "q1", "-a", "commands"}),
                    "", tmp.path};
  CHECK(run.exit_code(60s) == 1);
  CHECK(numbers_in(run.out()).size() == command_count);
  CHECK(numbers_in(read_file(tmp / "starts")).size() == command_count);
  // Bad settings: poolrun's own error (255), saying what is wrong.
  struct bad_case {
    std::vector<std::string> args;
    std::string says;
  };
  std::vector<bad_case> cases{
      {{"--enqueue", "echo", ":::", "1"}, "--enqueue needs --queue"},
      {{"--queue", "mysql://x/y", "echo", ":::", "1"},
       "--queue takes a PostgreSQL URI"},
      {{"--queue", url_of(pg), "--journal", "j.db", "echo", ":::", "1"},
       "choose one of --journal and --queue"},
      {{"--queue", url_of(pg), "--queue-name", "", "echo", ":::", "1"},
       "--queue-name"},
      {{"--queue", "postgres://postgres@127.0.0.1:1/postgres", "echo", ":::",
        "1"},
       "cannot open queue 'poolrun'"},
  };
  for (auto& x : cases) {
    child_process bad{poolrun_argv(x.args), "", tmp.path};
    CHECK(bad.exit_code(30s) == 255);
    CHECK_MESSAGE(bad.err().find(x.says) != std::string::npos, bad.err());
  }
}
