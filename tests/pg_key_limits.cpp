// Concurrency limits and start rates per key kept by the database across
// every store and pool on a shared PostgreSQL queue
// (`pg_store::set_key_limits`), against a private PostgreSQL 15 server per
// test: claims of several stores never hold more than a key's limit, a
// finished or given-back entry frees its slot, a key's rate counts what ran
// until a period after it ended, and the keys take turns within a claim
// and across claims; three pools on one queue, each limiting only its own
// process, never run more of a key at once than its limit (as the jobs
// saw it, and by the database's own record of their starts and ends), nor
// start more of a key within a period than its rate.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
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
#include "pool/pg_store.hpp"

#include "pg_store_fixture.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::key_flow_options;
using pool::key_limit;
using pool::pg_store;
using pool::work_record;

namespace {

using fixture = pool::test::pg_store_fixture;

work_record entry(uint64_t id, std::string key) {
  work_record x{attempt_id{id, 1}, caf::make_message(int32_t{7})};
  x.concurrency_key = std::move(key);
  return x;
}

// Claims everything due; returns the keys of what came out, in order
// ("-" for none).
std::vector<std::string> claim_all(pg_store& store, pg_store::time_point now,
                                   std::vector<uint64_t>* ids = nullptr) {
  std::vector<std::string> keys;
  while (auto x = store.pop_due(now)) {
    keys.push_back(x->concurrency_key.empty() ? "-" : x->concurrency_key);
    if (ids != nullptr)
      ids->push_back(x->id.operation);
  }
  return keys;
}

// Pushes `each` entries of every key of `keys`, key after key ("" for no
// key), as operations after `base`, and commits.
void push_keys(pg_store& store, pg_store::time_point now, uint64_t base,
               const std::vector<std::string>& keys, int each) {
  uint64_t n = 0;
  for (auto& key : keys)
    for (int i = 0; i < each; ++i)
      REQUIRE(!store.push(entry(base + ++n, key), now, now));
  REQUIRE(!store.commit());
}

size_t count_of(const std::vector<std::string>& xs, const std::string& x) {
  return static_cast<size_t>(std::count(xs.begin(), xs.end(), x));
}

// A store of the fixture's queue that keeps `limits`.
std::shared_ptr<pg_store> limited(fixture& fx, const key_flow_options& limits) {
  auto result = fx.open();
  result->set_key_limits(limits);
  return result;
}

} // namespace

TEST_CASE("claims of several stores hold at most a key's limit, and a "
          "finished or given-back entry frees its slot" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto base = a->last_operation_id();
  // Five of "a", five of "b", two without a key.
  push_keys(*a, fx.now, base, {"a", "b"}, 5);
  push_keys(*a, fx.now, base + 10, {""}, 2);
  auto limits = key_flow_options{}
                  .every_key(key_limit{2, std::nullopt})
                  .key("b", key_limit{1, std::nullopt});
  auto b1 = limited(fx, limits);
  auto b2 = limited(fx, limits);
  std::vector<uint64_t> held;
  auto first = claim_all(*b1, fx.now, &held);
  REQUIRE(!b1->commit());
  CHECK(count_of(first, "a") == 2);
  CHECK(count_of(first, "b") == 1);
  CHECK(count_of(first, "-") == 2);
  // The other store gets nothing of either key while those are held.
  CHECK(claim_all(*b2, fx.now).empty());
  REQUIRE(!b2->commit());
  // One of "a" finishes: one more of "a" for the other store.
  REQUIRE(!b1->finish(held.front(), caf::make_message(int32_t{1}), fx.now));
  REQUIRE(!b1->commit());
  CHECK(claim_all(*b2, fx.now) == std::vector<std::string>{"a"});
  REQUIRE(!b2->commit());
  // The first store closes (a process that stops, or dies: its leases
  // come back): its slots go to the other store.
  b1.reset();
  auto next = claim_all(*b2, fx.now);
  CHECK(count_of(next, "a") == 1); // b2 holds both of "a"'s slots now
  CHECK(count_of(next, "b") == 1); // and "b"'s one
  REQUIRE(!b2->commit());
  // Without limits, a store takes what is due at once.
  auto c = fx.open();
  CHECK(claim_all(*c, fx.now).size() >= 2);
}

TEST_CASE("start rates per key hold across stores: what a key holds and "
          "what ran of it counts until a period after it ended, and what "
          "goes back unstarted spends nothing" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto base = a->last_operation_id();
  push_keys(*a, fx.now, base, {"r", "q", "s"}, 4);
  // Every key: 2 starts an hour; "q": 1 an hour; "s": one at a time and no
  // rate (its own limits replace every key's).
  auto limits = key_flow_options{}
                  .every_key(key_limit{std::nullopt, pool::start_rate{2, 1h}})
                  .key("q", key_limit{std::nullopt, pool::start_rate{1, 1h}})
                  .key("s", key_limit{1, std::nullopt});
  auto b1 = limited(fx, limits);
  auto b2 = limited(fx, limits);
  std::vector<uint64_t> held;
  auto first = claim_all(*b1, fx.now, &held);
  REQUIRE(!b1->commit());
  CHECK(count_of(first, "r") == 2);
  CHECK(count_of(first, "q") == 1);
  CHECK(count_of(first, "s") == 1);
  CHECK(claim_all(*b2, fx.now).empty());
  REQUIRE(!b2->commit());
  // All of it ends: "s" may go on at once; "r" and "q" spent their hour.
  for (auto id : held)
    REQUIRE(!b1->finish(id, caf::make_message(int32_t{1}), fx.now));
  REQUIRE(!b1->commit());
  CHECK(claim_all(*b2, fx.now) == std::vector<std::string>{"s"});
  REQUIRE(!b2->commit());
  // An hour later (the claims' clock ahead of the server's), the rates
  // allow as much again.
  auto later = fx.now + 2h;
  auto second = claim_all(*b2, later);
  REQUIRE(!b2->commit());
  CHECK(count_of(second, "r") == 2);
  CHECK(count_of(second, "q") == 1);
  // A store that closes gives its claims back unstarted: nothing spent.
  b2.reset();
  auto b3 = limited(fx, limits);
  std::vector<uint64_t> ids;
  auto third = claim_all(*b3, later, &ids);
  REQUIRE(!b3->commit());
  CHECK(count_of(third, "r") == 2);
  CHECK(count_of(third, "q") == 1);
  CHECK(count_of(third, "s") == 1);
  // A failed attempt goes back for another: it ran, so its token stays
  // spent for the period; with the key's other entry held, its rate is
  // used up and the retry waits.
  push_keys(*a, fx.now, base + 12, {"u"}, 2);
  std::vector<uint64_t> u_ids;
  CHECK(claim_all(*b3, fx.now, &u_ids) == std::vector<std::string>{"u", "u"});
  REQUIRE(!b3->commit());
  work_record retry{attempt_id{u_ids.front(), 2}, caf::make_message(int32_t{7})};
  retry.concurrency_key = "u";
  REQUIRE(!b3->push(retry, fx.now, fx.now));
  REQUIRE(!b3->commit());
  CHECK(claim_all(*b3, fx.now).empty());
  REQUIRE(!b3->commit());
  // A store without the rates claims it at once.
  auto c = fx.open();
  CHECK(count_of(claim_all(*c, fx.now), "u") == 1);
}

TEST_CASE("keys take turns within a claim: each key's first, then each "
          "key's second" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto base = a->last_operation_id();
  // Submitted key after key; one without a key last.
  push_keys(*a, fx.now, base, {"x", "y", "z"}, 3);
  push_keys(*a, fx.now, base + 9, {""}, 1);
  auto b = fx.open();
  b->set_key_limits(key_flow_options{}.every_key(key_limit{3, std::nullopt}));
  CHECK(claim_all(*b, fx.now)
        == std::vector<std::string>{"x", "y", "z", "-", "x", "y", "z", "x",
                                    "y", "z"});
}

TEST_CASE("a 1,000-key backlog drains in turns across claims and stores: "
          "no key falls more than one turn behind another" *
          doctest::timeout(120)) {
  fixture fx;
  auto a = fx.open();
  auto base = a->last_operation_id();
  constexpr int keys = 1000;
  constexpr int each = 3;
  // Submitted key after key: submit order alone would drain key 0 first.
  std::vector<std::string> names;
  for (int k = 0; k < keys; ++k)
    names.push_back("k" + std::to_string(k));
  push_keys(*a, fx.now, base, names, each);
  // Two stores claim ten at a time, turn about, and finish at once.
  auto limits = key_flow_options{}.every_key(key_limit{1, std::nullopt});
  std::vector<std::shared_ptr<pg_store>> stores{
    fx.open(pool::pg_options{}.claim_batch(10)),
    fx.open(pool::pg_options{}.claim_batch(10))};
  for (auto& x : stores)
    x->set_key_limits(limits);
  std::map<std::string, int> served;
  size_t worst = 0; // the most a key was behind the one served
  size_t popped = 0;
  for (size_t turn = 0; popped < keys * each && turn < 20 * keys; ++turn) {
    auto& store = *stores[turn % 2];
    auto x = store.pop_due(fx.now);
    if (!x) {
      REQUIRE(!store.commit());
      continue;
    }
    ++popped;
    auto count = ++served[x->concurrency_key];
    // Every key with work left has been served at least count - 1 - lag.
    for (int k = 0; k < keys; ++k) {
      auto i = served.find("k" + std::to_string(k));
      auto other = i == served.end() ? 0 : i->second;
      if (other < each && other < count - 1)
        worst = std::max(worst, static_cast<size_t>(count - 1 - other));
    }
    REQUIRE(!store.finish(x->id.operation, caf::make_message(int32_t{1}),
                          fx.now));
    REQUIRE(!store.commit());
  }
  CHECK(popped == keys * each);
  MESSAGE("most turns a key fell behind: " << worst);
  CHECK(worst <= 1);
}

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

namespace {

// A job's own connection to the server (a worker's resource), for writing
// its start and end into a table of the database.
struct runs_db {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn{nullptr, &PQfinish};

  void note(const std::string& key, const char* phase) {
    const char* values[] = {key.c_str(), phase};
    auto res = PQexecParams(conn.get(),
                            "INSERT INTO runs (key, phase) VALUES ($1, $2)",
                            2, nullptr, values, nullptr, nullptr, 0);
    auto ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (!ok)
      throw std::runtime_error(PQerrorMessage(conn.get()));
  }
};

} // namespace

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
  auto connect = [conninfo] {
    runs_db db;
    db.conn.reset(PQconnectdb(conninfo.c_str()));
    if (PQstatus(db.conn.get()) != CONNECTION_OK)
      throw std::runtime_error(PQerrorMessage(db.conn.get()));
    return db;
  };
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
