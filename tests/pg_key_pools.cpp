// Concurrency limits and start rates per key across three pools on one
// shared PostgreSQL queue in one process, each pool with a store of its
// own (`pool_options::key_flow`, kept by the database through
// `pg_store::set_key_limits`), against a private PostgreSQL 15 server per
// test: never more of a key at once than its limit (as the jobs saw it,
// and by the database's own record of their starts and ends), nor more
// starts of a key within a period than its rate. (The store-level checks
// are in tests/pg_key_limits.cpp; three processes in
// tests/pg_key_processes.cpp.)
#include <doctest/doctest.h>

#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "pool/all.hpp"
#include "pool/key_limits.hpp"

#include "pg_fixture.hpp"
#include "runs_db.hpp"

using namespace std::chrono_literals;
using pool::key_flow_options;
using pool::key_limit;

using pool::test::runs_db;

namespace {

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

// How many jobs of each key run at once, at most.
struct overlap {
  std::mutex mtx;
  std::map<std::string, int> running;
  std::map<std::string, int> most;

  void start(const std::string& key) {
    std::lock_guard<std::mutex> guard{mtx};
    most[key] = std::max(most[key], ++running[key]);
  }

  void end(const std::string& key) {
    std::lock_guard<std::mutex> guard{mtx};
    --running[key];
  }
};

// Three pools of `workers` on the server's queue, each with `flow`, each
// made by `spawn(options)`.
template <class Spawn>
std::vector<caf::actor> three_pools_by(Spawn spawn,
                                       const pool::test::pg_cluster& pg,
                                       const key_flow_options& flow,
                                       size_t workers) {
  std::vector<caf::actor> pools;
  for (int i = 0; i < 3; ++i) {
    auto opts = pool::pool_options{}
                  .workers(workers)
                  .postgres(pg.conninfo())
                  .key_flow(flow)
                  .log(pool::silent_log_hook());
    auto p = spawn(std::move(opts));
    REQUIRE_MESSAGE(p, (p ? std::string{} : pool::describe(p.error())));
    pools.push_back(*p);
  }
  return pools;
}

// Three pools of `workers` running `job` on the server's queue, each with
// `flow`.
template <class Job>
std::vector<caf::actor> three_pools(caf::actor_system& sys,
                                    const pool::test::pg_cluster& pg, Job job,
                                    const key_flow_options& flow,
                                    size_t workers) {
  return three_pools_by(
    [&](pool::pool_options opts) {
      return pool::spawn_pool(sys, job, std::move(opts));
    },
    pg, flow, workers);
}

// Enqueues `rounds` operations of each of `keys`, round the pools, each
// with its key as input and concurrency key; returns how many.
size_t enqueue_rounds(caf::scoped_actor& self,
                      const std::vector<caf::actor>& pools,
                      const std::vector<std::string>& keys, int rounds) {
  size_t sent = 0;
  for (int i = 0; i < rounds; ++i)
    for (auto& key : keys) {
      auto opts = pool::job_options{}.concurrency_key(key);
      self->send(pools[sent++ % pools.size()], pool::enqueue_with_atom_v,
                 opts, key);
    }
  return sent;
}

// Waits until `sent` enqueues were acknowledged and their operations
// done, at most `limit` between two messages.
void await_done(caf::scoped_actor& self, size_t sent, caf::timespan limit) {
  size_t acked = 0;
  size_t done = 0;
  bool timed_out = false;
  while ((acked < sent || done < sent) && !timed_out)
    self->receive([&](uint64_t) { ++acked; },
                  [&](caf::error& err) { FAIL(pool::describe(err)); },
                  [&](pool::op_done_atom, uint64_t, caf::message&) { ++done; },
                  [&](pool::op_failed_atom, uint64_t, caf::error& err) {
                    FAIL(pool::describe(err));
                  },
                  caf::after(limit) >> [&] { timed_out = true; });
  REQUIRE_MESSAGE(!timed_out, acked << " acked, " << done << " done");
}

} // namespace

TEST_CASE("three pools on one queue never run more of a key at once than "
          "its limit, though each pool limits only its own process" *
          doctest::timeout(120)) {
  pool::test::pg_cluster pg;
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto seen = std::make_shared<overlap>();
  auto job = [seen](std::string key) {
    seen->start(key);
    std::this_thread::sleep_for(3ms);
    seen->end(key);
    return key.size();
  };
  auto flow = key_flow_options{}
                .every_key(key_limit{1, std::nullopt})
                .key("wide", key_limit{2, std::nullopt});
  auto pools = three_pools(sys, pg, job, flow, 3);
  // 20 operations of each key, submitted round the three pools.
  auto sent = enqueue_rounds(self, pools, {"a", "b", "wide"}, 20);
  await_done(self, sent, 30s);
  std::lock_guard<std::mutex> guard{seen->mtx};
  MESSAGE("most at once: a " << seen->most["a"] << ", b " << seen->most["b"]
                             << ", wide " << seen->most["wide"]);
  CHECK(seen->most["a"] == 1);
  CHECK(seen->most["b"] == 1);
  CHECK(seen->most["wide"] <= 2);
  for (auto& p : pools)
    self->send_exit(p, caf::exit_reason::user_shutdown);
}


TEST_CASE("three pools on one queue never run more of a key at once than "
          "its limit, by the database's own record of starts and ends" *
          doctest::timeout(120)) {
  pool::test::pg_cluster pg;
  // Each start and end as the server's clock saw it (clock_timestamp: the
  // time of the insert itself, not of its transaction).
  pg.sql("CREATE TABLE runs (key text NOT NULL, phase text NOT NULL, "
         "at timestamptz NOT NULL DEFAULT clock_timestamp())");
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto conninfo = pg.admin_conninfo();
  auto connect = [conninfo] { return runs_db::connect(conninfo); };
  auto job = [](runs_db& db, std::string key) {
    db.note(key, "start");
    std::this_thread::sleep_for(3ms);
    db.note(key, "end");
    return key.size();
  };
  auto flow = key_flow_options{}
                .every_key(key_limit{1, std::nullopt})
                .key("wide", key_limit{2, std::nullopt});
  auto pools = three_pools_by(
    [&](pool::pool_options opts) {
      return pool::spawn_resource_pool(sys, connect, job, std::move(opts));
    },
    pg, flow, 3);
  auto sent = enqueue_rounds(self, pools, {"a", "b", "wide"}, 20);
  await_done(self, sent, 30s);
  for (auto& p : pools)
    self->send_exit(p, caf::exit_reason::user_shutdown);
  // Most running at once of `key`: a running sum over its starts (+1) and
  // ends (-1) in the server's order (an end first at a tie).
  auto most = [&pg](const std::string& key) {
    return pg.query(
      "SELECT max(running) FROM (SELECT sum(CASE phase WHEN 'start' THEN 1 "
      "ELSE -1 END) OVER (ORDER BY at, phase ROWS UNBOUNDED PRECEDING) AS "
      "running FROM runs WHERE key = '" + key + "') t");
  };
  MESSAGE("most at once, by the database's record: a " << most("a") << ", b "
          << most("b") << ", wide " << most("wide"));
  CHECK(pg.query("SELECT count(*) FROM runs WHERE phase = 'start'") == "60");
  CHECK(pg.query("SELECT count(*) FROM runs WHERE phase = 'end'") == "60");
  CHECK(most("a") == "1");
  CHECK(most("b") == "1");
  auto wide = most("wide");
  CHECK((wide == "1" || wide == "2"));
}

TEST_CASE("three pools on one queue never start more of a key within a "
          "period than its rate, though each pool limits only its own "
          "process" *
          doctest::timeout(120)) {
  pool::test::pg_cluster pg;
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  // When each operation of the key started, in this process's clock.
  struct starts {
    std::mutex mtx;
    std::vector<std::chrono::steady_clock::time_point> at;
  };
  auto seen = std::make_shared<starts>();
  auto job = [seen](std::string key) {
    {
      std::lock_guard<std::mutex> guard{seen->mtx};
      seen->at.push_back(std::chrono::steady_clock::now());
    }
    return key.size();
  };
  constexpr auto period = 300ms;
  auto flow = key_flow_options{}.every_key(
    key_limit{std::nullopt, pool::start_rate{2, period}});
  auto pools = three_pools(sys, pg, job, flow, 2);
  constexpr size_t total = 8;
  auto opts = pool::job_options{}.concurrency_key("api");
  for (size_t i = 0; i < total; ++i)
    self->send(pools[i % 3], pool::enqueue_with_atom_v, opts,
               std::string{"api"});
  await_done(self, total, 60s);
  std::lock_guard<std::mutex> guard{seen->mtx};
  auto& at = seen->at;
  REQUIRE(at.size() == total);
  std::sort(at.begin(), at.end());
  // No period holds three starts: the third after any start is a period
  // later or more.
  auto closest = std::chrono::steady_clock::duration::max();
  for (size_t i = 2; i < at.size(); ++i)
    closest = std::min(closest, at[i] - at[i - 2]);
  auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  MESSAGE("closest three starts span " << ms(closest) << " ms; all took "
                                       << ms(at.back() - at.front()) << " ms");
  // (The database keeps the rate by the server's clock, and a store's
  // estimate of it may be off by a round trip: a few ms of slack. Without
  // the database's rate, the three pools start up to six at once.)
  CHECK(closest >= period - 10ms);
  for (auto& p : pools)
    self->send_exit(p, caf::exit_reason::user_shutdown);
}
