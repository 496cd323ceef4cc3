// --queue under faults: three poolruns drain one command list from a
// shared PostgreSQL queue (a private server per test, tests/pg_fixture.hpp)
// while the server is stopped for 5 s, for 60 s and for longer than
// --queue-outage, killed with SIGKILL, or one poolrun is SIGKILLed; a
// poolrun that finishes first; SIGTERM during an outage. Each command
// appends "<seq> <poolrun pid>" to `starts` when it starts, so that runs
// and re-runs are counted wherever they ran.
#include "child_process.hpp"
#include "pg_fixture.hpp"

#include <map>
#include <memory>
#include <set>
#include <sstream>

using namespace poolrun::test;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

std::string url_of(const pool::test::pg_cluster& pg) {
  return "postgres://postgres@127.0.0.1:" + std::to_string(pg.port) +
         "/postgres";
}

/// `count` commands; command n notes its start, then takes `sleep`.
std::string commands(int count, const std::string& sleep,
                     const std::string& tag = "") {
  std::string result;
  for (int n = 1; n <= count; ++n)
    result += "echo " + tag + std::to_string(n) +
              " $PARALLEL_PID >> starts; sleep " + sleep + "\n";
  return result;
}

/// Starts per command (by its text before the pid), and by which poolrun.
struct start_log {
  std::map<std::string, int> runs;
  std::map<std::string, std::set<std::string>> where;

  explicit start_log(const std::string& text) {
    for (auto& line : lines_of(text)) {
      std::istringstream words{line};
      std::string what;
      std::string pid;
      if (words >> what >> pid) {
        ++runs[what];
        where[what].insert(pid);
      }
    }
  }

  int again() const {
    int result = 0;
    for (auto& [what, n] : runs)
      result += n - 1;
    return result;
  }
};

/// The operations of each key that more than one operation has.
std::string duplicates(pool::test::pg_cluster& pg) {
  return pg.query("SELECT string_agg(id || ' ' || state || ' ' || attempt "
                  "|| ' ' || coalesce(owner, '-') || ' ' || key, E'\n') "
                  "FROM pool.operations WHERE key IN (SELECT key FROM "
                  "pool.operations GROUP BY key HAVING count(*) > 1)");
}

/// Checks that every one of `count` commands is done in the queue. Two
/// poolruns may both insert a line when one of them finished it between the
/// other's key lookup and its insert (the unique index covers live
/// operations only): counted, and bounded by the commands in flight.
void check_all_done(pool::test::pg_cluster& pg, int count) {
  CHECK(pg.query("SELECT count(DISTINCT key) FROM pool.operations WHERE "
                 "state = 2") == std::to_string(count));
  auto twice = std::stoi(pg.query("SELECT count(*) - count(DISTINCT key) "
                                  "FROM pool.operations"));
  MESSAGE(twice << " lines inserted twice");
  CHECK_MESSAGE(twice <= 2, duplicates(pg));
}

/// Three (or `n`) poolruns of one queue over `file`.
struct poolruns {
  std::vector<std::unique_ptr<child_process>> children;
  std::vector<int> codes;

  poolruns(const pool::test::pg_cluster& pg, const temp_dir& tmp,
           const std::string& file, size_t n = 3,
           std::vector<std::string> extra = {}) {
    for (size_t i = 0; i < n; ++i) {
      std::vector<std::string> args{"-j", "2", "--queue", url_of(pg),
                                    "--joblog", "log" + std::to_string(i)};
      args.insert(args.end(), extra.begin(), extra.end());
      args.insert(args.end(), {"-a", file});
      children.push_back(
          std::make_unique<child_process>(poolrun_argv(args), "", tmp.path));
    }
  }

  /// Reads their output while they run (none blocks on a full pipe) and
  /// waits for each to exit by itself; their exit codes.
  std::vector<int> wait(std::chrono::seconds within,
                        const std::set<size_t>& skip = {}) {
    auto deadline = clock_type::now() + within;
    for (;;) {
      bool running = false;
      for (size_t i = 0; i < children.size(); ++i) {
        if (skip.count(i) > 0)
          continue;
        children[i]->pump(5);
        running = running || !process_gone(children[i]->pid());
      }
      if (!running || clock_type::now() > deadline)
        break;
    }
    codes.clear();
    for (size_t i = 0; i < children.size(); ++i)
      codes.push_back(skip.count(i) > 0 ? -1 : children[i]->exit_code(10s));
    return codes;
  }

  /// Whether each of them wrote `what` to standard error.
  bool each_said(const std::string& what) const {
    for (auto& c : children)
      if (c->err().find(what) == std::string::npos)
        return false;
    return true;
  }

  std::string errors() const {
    std::string result;
    for (auto& c : children)
      result += c->err().substr(0, 2000) + "\n--\n";
    return result;
  }
};

/// Runs 900 short commands in three poolruns; `fault` strikes 2 s in.
/// Every poolrun exits 0 by itself, every command ran, again at most as
/// often as commands were running when the fault struck (6).
void ride_out(pool::test::pg_cluster& pg, const std::function<void()>& fault,
              std::chrono::seconds within) {
  temp_dir tmp;
  constexpr int count = 900;
  write_file(tmp / "commands", commands(count, "0.01"));
  poolruns runs{pg, tmp, "commands"};
  std::this_thread::sleep_for(2s); // mid-run
  auto before = start_log(read_file(tmp / "starts")).runs.size();
  auto struck = clock_type::now();
  fault();
  auto codes = runs.wait(within);
  auto took = seconds_since(struck);
  start_log starts{read_file(tmp / "starts")};
  MESSAGE(before << " commands had started when the fault struck; all "
                 << "poolruns ended " << took << " s after it; "
                 << starts.again() << " commands ran twice");
  for (auto code : codes)
    CHECK_MESSAGE(code == 0, runs.errors());
  CHECK(before < static_cast<size_t>(count)); // the fault struck mid-run
  CHECK(starts.runs.size() == static_cast<size_t>(count));
  CHECK(starts.again() <= 6);
  check_all_done(pg, count);
  CHECK(pg.query("SELECT count(*) FROM pool.failures") == "0");
}

} // namespace

TEST_CASE("three poolruns of one queue ride out a 5 s stop of the server: "
          "every command runs, each poolrun exits 0 by itself" *
          doctest::timeout(180)) {
  pool::test::pg_cluster pg;
  ride_out(
      pg,
      [&] {
        pg.stop();
        std::this_thread::sleep_for(5s); // the outage under test
        pg.start();
      },
      90s);
}

TEST_CASE("three poolruns of one queue ride out a 60 s stop of the server, "
          "longer than their leases (30 s): every command runs once, each "
          "poolrun exits 0 by itself" *
          doctest::timeout(300)) {
  pool::test::pg_cluster pg;
  ride_out(
      pg,
      [&] {
        pg.stop();
        std::this_thread::sleep_for(60s); // the outage under test
        pg.start();
      },
      150s);
}

TEST_CASE("an outage longer than --queue-outage: each poolrun stops by "
          "itself with poolrun's error, and a rerun with --retries runs "
          "what was left" *
          doctest::timeout(180)) {
  pool::test::pg_cluster pg;
  temp_dir tmp;
  // About 5 s of work for the three (sleeps, not CPU): each is still
  // running when the server stops, on a fast machine too.
  constexpr int count = 600;
  write_file(tmp / "commands", commands(count, "0.05"));
  poolruns runs{pg, tmp, "commands", 3, {"--queue-outage", "2s"}};
  std::this_thread::sleep_for(2s); // mid-run
  pg.stop();
  auto stopped = clock_type::now();
  auto codes = runs.wait(60s);
  auto took = seconds_since(stopped);
  MESSAGE("the poolruns ended " << took << " s after the server stopped");
  for (auto code : codes)
    CHECK_MESSAGE(code == 255, runs.errors());
  CHECK(took < 40);
  CHECK(runs.each_said("longer than --queue-outage"));
  pg.start();
  // What ran when they stopped counts as run (their outcomes were lost
  // with the database): a retry runs it again.
  child_process again{poolrun_argv({"-j", "2", "--queue", url_of(pg),
                                    "--retries", "2", "-a", "commands"}),
                      "", tmp.path};
  CHECK(again.exit_code(90s) == 0);
  start_log starts{read_file(tmp / "starts")};
  MESSAGE(starts.again() << " commands ran twice");
  CHECK(starts.runs.size() == static_cast<size_t>(count));
  check_all_done(pg, count);
}

TEST_CASE("three poolruns of one queue ride out a SIGKILL of the server: "
          "every command runs, each poolrun exits 0 by itself" *
          doctest::timeout(180)) {
  pool::test::pg_cluster pg;
  ride_out(
      pg,
      [&] {
        pg.kill_server();
        std::this_thread::sleep_for(2s); // the outage under test
        pg.start();
      },
      90s);
}

TEST_CASE("one of three poolruns SIGKILLed without --retries: what it held "
          "and never started runs elsewhere at once, only what it was "
          "running fails, the others exit by themselves" *
          doctest::timeout(180)) {
  pool::test::pg_cluster pg;
  temp_dir tmp;
  constexpr int count = 240;
  write_file(tmp / "commands", commands(count, "0.1"));
  poolruns runs{pg, tmp, "commands"};
  auto victim = std::to_string(runs.children[1]->pid());
  std::this_thread::sleep_for(2s); // mid-run
  runs.children[1]->signal(SIGKILL);
  auto killed = clock_type::now();
  auto held = pg.query("SELECT count(*) FROM pool.operations WHERE state = 1 "
                       "AND owner LIKE '%:" + victim + ":%'");
  auto codes = runs.wait(90s, {1});
  auto took = seconds_since(killed);
  start_log starts{read_file(tmp / "starts")};
  // What failed for good: commands that the victim was running.
  auto failed = std::stoi(pg.query("SELECT count(*) FROM pool.operations "
                                   "WHERE state = 3"));
  MESSAGE("the killed poolrun held " << held << " entries; the others ended "
                                     << took << " s after the kill; "
                                     << failed << " failed for good, "
                                     << starts.again() << " ran twice");
  CHECK(took < 25); // its leases last 30 s
  // Every command ran, except that one the victim had started may have
  // died with it before its first line (`echo`): that one failed for
  // good, as the database says (seen once in CI: 239 of 240 logged, 2
  // failed).
  CHECK(starts.runs.size() <= static_cast<size_t>(count));
  CHECK(starts.runs.size() + failed >= static_cast<size_t>(count));
  // What ran in its two slots failed for good (no retries), or ran again
  // if it died before it noted the start; nothing else did either.
  CHECK(failed + starts.again() <= 2);
  for (auto i : {0, 2})
    CHECK_MESSAGE(codes[i] == failed, runs.errors());
  for (auto& [what, where] : starts.where)
    if (starts.runs[what] > 1)
      CHECK(where.count(victim) == 1);
  CHECK(pg.query("SELECT count(*) FROM pool.operations WHERE state = 2") ==
        std::to_string(count - failed));
  CHECK(pg.query("SELECT count(*) FROM pool.failures") ==
        std::to_string(failed));
}

TEST_CASE("a poolrun that finishes first gives back what it claimed at "
          "once: the other never waits out its lease" *
          doctest::timeout(180)) {
  pool::test::pg_cluster pg;
  temp_dir tmp;
  write_file(tmp / "short", commands(20, "0.01", "s"));
  write_file(tmp / "long", commands(600, "0.01", "l"));
  child_process first{poolrun_argv({"-j", "2", "--queue", url_of(pg), "-a",
                                    "short"}),
                      "", tmp.path};
  child_process second{poolrun_argv({"-j", "2", "--queue", url_of(pg), "-a",
                                     "long"}),
                       "", tmp.path};
  auto started = clock_type::now();
  CHECK(first.exit_code(60s) == 0);
  auto first_done = seconds_since(started);
  CHECK(second.exit_code(60s) == 0);
  auto second_done = seconds_since(started);
  start_log starts{read_file(tmp / "starts")};
  MESSAGE("the short list ended after " << first_done << " s, the long one "
                                        << second_done << " s");
  CHECK(starts.runs.size() == 620);
  CHECK(starts.again() == 0);
  CHECK(second_done < 30); // no lease of 30 s waited out
  CHECK(pg.query("SELECT count(*) FROM pool.failures") == "0");
  CHECK(pg.query("SELECT count(*) FROM pool.operations WHERE state = 2") ==
        "620");
}

TEST_CASE("a SIGTERM during an outage ends poolrun: running commands "
          "finish, the run ends by the signal" *
          doctest::timeout(120)) {
  pool::test::pg_cluster pg;
  temp_dir tmp;
  write_file(tmp / "commands", commands(400, "0.05"));
  child_process run{poolrun_argv({"-j", "2", "--queue", url_of(pg), "-a",
                                  "commands"}),
                    "", tmp.path};
  std::this_thread::sleep_for(2s);
  pg.stop();
  std::this_thread::sleep_for(1s);
  run.signal(SIGTERM);
  auto signalled = clock_type::now();
  auto status = run.wait(60s);
  auto took = seconds_since(signalled);
  MESSAGE("ended " << took << " s after SIGTERM: " << run.err().substr(0, 400));
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK(took < 20);
  pg.start();
}
