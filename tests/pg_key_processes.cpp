// Concurrency limits per key across pool *processes* on one shared
// PostgreSQL queue (issue 44), against a private PostgreSQL 15 server:
// three `pg_key_child` processes, each limiting only what its own pool
// runs, never run more of a key at once than its limit, by the database's
// own record of their jobs' starts and ends; and a 1,000-key backlog
// drains in turns across the three (no key more than two turns behind
// another). Every process exits 0 by itself on SIGTERM.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "pool/key_limits.hpp"
#include "pool/pg_store.hpp"

#include "child_process.hpp"
#include "pg_store_fixture.hpp"
#include "sqlite_files.hpp"

using namespace std::chrono_literals;
using pool::test::eventually;

namespace {

using fixture = pool::test::pg_store_fixture;

// Three child processes on the fixture's server; their "ready" and
// "stopped" lines go to files of `dir`.
struct children {
  fixture& fx;
  std::string dir;
  std::vector<pid_t> pids;

  std::string file_of(size_t i) const {
    return dir + "/child" + std::to_string(i);
  }

  bool said(size_t i, const std::string& word) const {
    std::ifstream in{file_of(i)};
    for (std::string line; std::getline(in, line);)
      if (line == word)
        return true;
    return false;
  }

  // Starts three, each submitting `rounds` of each key first.
  void start(long rounds, const std::string& job_ms) {
    for (size_t i = 0; i < 3; ++i)
      pids.push_back(pool::test::start_process(
        PG_KEY_CHILD,
        {fx.pg.conninfo(), file_of(i), std::to_string(rounds), job_ms},
        file_of(i) + ".err"));
    for (size_t i = 0; i < 3; ++i)
      REQUIRE_MESSAGE(eventually([&] { return said(i, "ready"); }, 30s),
                      "child " << i << ": "
                               << pool::test::read_all(file_of(i) + ".err"));
  }

  // SIGTERM to each; each must stop its pool and exit 0 by itself.
  void stop() {
    for (auto pid : pids)
      ::kill(pid, SIGTERM);
    for (size_t i = 0; i < pids.size(); ++i) {
      auto status = pool::test::wait_for(pids[i], 40s);
      CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0),
                    "child " << i << " ended with status " << status << ": "
                             << pool::test::read_all(file_of(i) + ".err"));
      CHECK(said(i, "stopped"));
    }
    pids.clear();
  }

  ~children() {
    for (auto pid : pids) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// Each start and end as the server's clock saw it (clock_timestamp: the
// time of the insert itself, not of its transaction), numbered in the
// order the server took them.
void make_runs_table(fixture& fx) {
  fx.pg.sql("CREATE TABLE runs (n bigserial PRIMARY KEY, key text NOT NULL, "
            "phase text NOT NULL, at timestamptz NOT NULL DEFAULT "
            "clock_timestamp())");
}

long count_of(fixture& fx, const std::string& phase) {
  return std::stol(
    fx.pg.query("SELECT count(*) FROM runs WHERE phase = '" + phase + "'"));
}

} // namespace

TEST_CASE("three pool processes on one queue never run more of a key at "
          "once than its limit, by the database's record of starts and "
          "ends" *
          doctest::timeout(180)) {
  fixture fx;
  make_runs_table(fx);
  pool::test::temp_dir tmp;
  children kids{fx, tmp.path, {}};
  // Each submits ten rounds of "a", "b" (limit 1) and "wide" (limit 2):
  // 90 operations, 3 ms each, three workers per process.
  kids.start(10, "3");
  auto finished = eventually([&] { return count_of(fx, "end") >= 90; }, 90s);
  kids.stop();
  REQUIRE_MESSAGE(finished, count_of(fx, "end") << " of 90 ended");
  // Most running at once of `key`: a running sum over its starts (+1) and
  // ends (-1) in the server's order (an end first at a tie).
  auto most = [&fx](const std::string& key) {
    return fx.pg.query(
      "SELECT max(running) FROM (SELECT sum(CASE phase WHEN 'start' THEN 1 "
      "ELSE -1 END) OVER (ORDER BY at, phase ROWS UNBOUNDED PRECEDING) AS "
      "running FROM runs WHERE key = '" + key + "') t");
  };
  // How many processes ran each key: the limit held across them, not
  // within one.
  MESSAGE("most at once, by the database's record: a "
          << most("a") << ", b " << most("b") << ", wide " << most("wide"));
  CHECK(count_of(fx, "start") == 90);
  CHECK(count_of(fx, "end") == 90);
  CHECK(most("a") == "1");
  CHECK(most("b") == "1");
  auto wide = most("wide");
  CHECK((wide == "1" || wide == "2"));
  // Each operation done once.
  CHECK(fx.pg.query("SELECT count(*) FROM pool.operations WHERE queue = "
                    "'keys' AND state = 2") == "90");
}

TEST_CASE("a 1,000-key backlog drains in turns across three pool "
          "processes: no key more than two turns behind another" *
          doctest::timeout(180)) {
  fixture fx;
  make_runs_table(fx);
  // Submitted key after key, four of each, before any process runs:
  // submit order alone would drain key 0 first (without the database's
  // turns the measure below reaches 3: a key's fourth start before another
  // key's first).
  constexpr int keys = 1000;
  constexpr int each = 4;
  {
    auto store = fx.open(pool::pg_options{}.queue("keys"));
    auto id = store->last_operation_id();
    for (int k = 0; k < keys; ++k)
      for (int i = 0; i < each; ++i) {
        auto key = "k" + std::to_string(k);
        pool::work_record x{pool::attempt_id{++id, 1},
                            caf::make_message(key)};
        x.concurrency_key = key;
        REQUIRE(!store->push(std::move(x), fx.now, fx.now));
      }
    REQUIRE(!store->commit());
  }
  pool::test::temp_dir tmp;
  children kids{fx, tmp.path, {}};
  kids.start(0, "0");
  constexpr long total = keys * each;
  auto finished
    = eventually([&] { return count_of(fx, "end") >= total; }, 120s);
  kids.stop();
  REQUIRE_MESSAGE(finished, count_of(fx, "end") << " of " << total
                                                << " ended");
  CHECK(count_of(fx, "start") == total);
  // The starts in the server's order: when a key starts its n-th
  // operation, how far behind is the key served least that still has work?
  std::istringstream order{
    fx.pg.query("SELECT string_agg(key, ' ' ORDER BY n) FROM runs WHERE "
                "phase = 'start'")};
  std::map<std::string, int> served;
  // Keys by how many of theirs started (all at 0 first).
  std::map<int, int> at_count{{0, keys}};
  int worst = 0;
  for (std::string key; order >> key;) {
    auto& count = served[key];
    if (--at_count[count] == 0)
      at_count.erase(count);
    ++count;
    if (count < each)
      ++at_count[count];
    // The least-served key with work left.
    if (!at_count.empty())
      worst = std::max(worst, count - 1 - at_count.begin()->first);
  }
  MESSAGE("most turns a key fell behind, over three processes: " << worst);
  CHECK(served.size() == static_cast<size_t>(keys));
  CHECK(worst <= 2);
}
