// Periodic operations over a PostgreSQL queue shared by two processes:
// both run the same schedule (every second, `pool::spawn_periodic`), one
// of them 400 ms late (after the other's run of the tick finished), and
// each tick is enqueued once and runs once (tests/pg_pool_child.cpp in
// "cron" mode, against a private PostgreSQL 15 server).
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "pg_fixture.hpp"
#include "sqlite_files.hpp"

using namespace std::chrono_literals;
using pool::test::eventually;

TEST_CASE("two processes running one schedule over PostgreSQL: each tick "
          "is enqueued once and runs once" *
          doctest::timeout(120)) {
  pool::test::pg_cluster pg;
  pool::test::temp_dir tmp;
  auto log_of = [&](int i) { return tmp.path + "/child" + std::to_string(i); };
  // Lines of the children's logs: "tick <operation id>" per run.
  auto ticks = [&] {
    std::map<std::string, int> runs;
    for (int i = 0; i < 2; ++i) {
      std::ifstream in{log_of(i)};
      std::string word;
      std::string id;
      for (std::string line; std::getline(in, line);) {
        std::istringstream words{line};
        if (words >> word >> id && word == "tick")
          ++runs[id];
      }
    }
    return runs;
  };
  std::vector<pid_t> pids;
  for (int i = 0; i < 2; ++i) {
    pids.push_back(pool::test::start_process(
        PG_POOL_CHILD, {pg.conninfo(), log_of(i), i == 0 ? "cron" : "cron-late"},
        log_of(i) + ".err"));
    REQUIRE_MESSAGE(eventually(
                        [&] {
                          return pool::test::read_all(log_of(i)).find("ready")
                                 != std::string::npos;
                        },
                        30s),
                    pool::test::read_all(log_of(i) + ".err"));
  }
  // Both schedulers run for at least five ticks.
  auto ran = eventually([&] { return ticks().size() >= 5; }, 30s);
  for (auto pid : pids) {
    ::kill(pid, SIGKILL);
    pool::test::wait_for(pid, 10s);
  }
  REQUIRE_MESSAGE(ran, "ticks run: " << ticks().size());
  // One row per tick: two schedulers, one enqueue each.
  auto rows = pg.query("SELECT count(*) FROM pool.operations WHERE queue = "
                       "'chaos' AND key LIKE 'cron:tick:%'");
  auto keys = pg.query("SELECT count(DISTINCT key) FROM pool.operations "
                       "WHERE queue = 'chaos' AND key LIKE 'cron:tick:%'");
  MESSAGE("tick rows " << rows << ", distinct ticks " << keys);
  CHECK(rows == keys);
  CHECK(std::stol(rows) >= 5);
  // Each tick's operation ran once, in one of the two processes.
  auto runs = ticks();
  for (auto& [id, count] : runs)
    CHECK_MESSAGE(count == 1, "op " << id << " ran " << count << " times");
  CHECK(runs.size() <= std::stoul(rows));
}
