// Pools over a PostgreSQL queue (`pool_options::postgres`), on the real
// scheduler against a private PostgreSQL 15 server (tests/pg_fixture.hpp):
// pools sharing a queue each run what they claim and callers get their
// outcomes wherever the work ran; a dead pool's attempts are taken back by
// another; a database restart is survived; bad input fails at spawn.
#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "pool/all.hpp"
#include "pool/pg_store.hpp"

#include "child_process.hpp"
#include "pg_fixture.hpp"
#include "sqlite_files.hpp"

using namespace std::chrono_literals;
using pool::test::eventually;

namespace {

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

// The cluster comes first: it forks before the actor system starts threads.
struct fixture {
  pool::test::pg_cluster pg;
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};

  pool::pool_options options(size_t workers, pool::pg_options pg_opts = {}) {
    return pool::pool_options{}
        .workers(workers)
        .postgres(pg.conninfo(), std::move(pg_opts))
        .log(pool::silent_log_hook());
  }

  template <class F>
  caf::actor spawn(F fn, pool::pool_options opts) {
    auto result = pool::spawn_pool(sys, std::move(fn), std::move(opts));
    REQUIRE_MESSAGE(result, pool::describe(result.error()));
    return *result;
  }

  pool::pool_stats stats(const caf::actor& pool) {
    pool::pool_stats result;
    self->request(pool, 10s, pool::pool_stats_atom_v)
        .receive([&](pool::pool_stats& x) { result = x; },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
    return result;
  }

  caf::expected<pool::operation_record> status(const caf::actor& pool,
                                               uint64_t id) {
    caf::expected<pool::operation_record> result{caf::no_error};
    self->request(pool, 10s, pool::op_status_atom_v, id)
        .receive([&](pool::operation_record& x) { result = std::move(x); },
                 [&](caf::error& err) { result = std::move(err); });
    return result;
  }

  // Enqueues `inputs` to `pool`; returns the ids in order.
  std::vector<uint64_t> enqueue(const caf::actor& pool,
                                const std::vector<int64_t>& inputs) {
    for (auto x : inputs)
      self->send(pool, pool::enqueue_atom_v, x);
    std::vector<uint64_t> ids;
    bool timed_out = false;
    while (ids.size() < inputs.size() && !timed_out)
      self->receive([&](uint64_t id) { ids.push_back(id); },
                    [&](caf::error& err) { FAIL(pool::describe(err)); },
                    caf::after(30s) >> [&] { timed_out = true; });
    REQUIRE_MESSAGE(!timed_out, "acknowledged " << ids.size() << " of "
                                                << inputs.size());
    return ids;
  }

  // Waits for `n` outcomes (`op_done`); returns results by id.
  std::map<uint64_t, int64_t> outcomes(size_t n, caf::timespan within) {
    std::map<uint64_t, int64_t> results;
    bool timed_out = false;
    while (results.size() < n && !timed_out)
      self->receive(
          [&](pool::op_done_atom, uint64_t id, caf::message& result) {
            REQUIRE(result.match_elements<int64_t>());
            results[id] = result.get_as<int64_t>(0);
          },
          [&](pool::op_failed_atom, uint64_t id, caf::error& err) {
            FAIL("op#" << id << " failed: " << pool::describe(err));
          },
          caf::after(within) >> [&] { timed_out = true; });
    CHECK_MESSAGE(!timed_out, "got " << results.size() << " of " << n);
    return results;
  }
};

auto twice_after(std::chrono::milliseconds d) {
  return [d](int64_t x) {
    std::this_thread::sleep_for(d);
    return 2 * x;
  };
}

} // namespace

TEST_CASE("pools sharing a queue each run what they claim, and every caller "
          "gets its outcome wherever it ran" *
          doctest::timeout(120)) {
  fixture fx;
  // a runs slowly with one worker: b, idle, is woken by NOTIFY and takes
  // most of a's operations.
  auto a = fx.spawn(twice_after(20ms), fx.options(1));
  auto b = fx.spawn(twice_after(1ms), fx.options(3));
  std::vector<int64_t> inputs;
  for (int64_t i = 1; i <= 300; ++i)
    inputs.push_back(i);
  auto ids = fx.enqueue(a, inputs);
  auto results = fx.outcomes(inputs.size(), 60s);
  for (size_t i = 0; i < ids.size(); ++i)
    CHECK(results[ids[i]] == 2 * inputs[i]);
  auto sa = fx.stats(a);
  auto sb = fx.stats(b);
  MESSAGE("b ran " << sb.adopted << " of a's 300 operations");
  CHECK(sa.submitted == 300);
  CHECK(sa.completed == 300); // Run here or elsewhere: a's callers had them.
  CHECK(sb.submitted == 0);
  CHECK(sb.adopted > 0);
  CHECK(sb.adopted < 300);
  CHECK(sb.completed == sb.adopted);
  // Outcomes by id, from either pool.
  for (auto pool : {a, b}) {
    auto rec = fx.status(pool, ids.back());
    REQUIRE_MESSAGE(rec, pool::describe(rec.error()));
    CHECK(rec->state == pool::operation_state::done);
    CHECK(rec->result.get_as<int64_t>(0) == 600);
  }
  // Each operation ran once: one row each, all done.
  CHECK(fx.pg.query("SELECT count(*) FROM pool.operations WHERE state = 2") ==
        "300");
  CHECK(fx.pg.query("SELECT count(*) FROM pool.failures") == "0");
  // Both wait for nothing more and stop cleanly.
  for (auto pool : {a, b})
    fx.self->request(pool, 10s, pool::drain_atom_v)
        .receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE("a killed pool's store gives its attempt back at once, unstarted: "
          "another pool runs it as the same attempt" *
          doctest::timeout(120)) {
  fixture fx;
  auto gate = std::make_shared<std::atomic<bool>>(false);
  auto started = std::make_shared<std::atomic<int>>(0);
  auto stuck = [gate, started](int64_t x) {
    ++*started;
    while (!gate->load())
      std::this_thread::sleep_for(1ms);
    return 2 * x;
  };
  // The lease (30 s) is not waited for.
  auto a = fx.spawn(stuck, fx.options(1).kind(pool::worker_kind::dedicated));
  auto ids = fx.enqueue(a, {21});
  REQUIRE(eventually([&] { return started->load() == 1; }, 10s));
  // a dies with the attempt leased to it: its store closes and gives the
  // attempt back (its job still runs on a's thread: it may run twice).
  caf::anon_send_exit(a, caf::exit_reason::kill);
  a = nullptr;
  auto b = fx.spawn(twice_after(0ms), fx.options(1));
  auto done = eventually(
      [&] {
        auto rec = fx.status(b, ids[0]);
        return rec && rec->state == pool::operation_state::done;
      },
      20s);
  gate->store(true);
  REQUIRE(done);
  auto rec = fx.status(b, ids[0]);
  REQUIRE(rec);
  CHECK(rec->attempt == 1);
  CHECK(rec->result.template get_as<int64_t>(0) == 42);
  CHECK(rec->history.empty());
  auto sb = fx.stats(b);
  CHECK(sb.adopted == 1);
  CHECK(sb.completed == 1);
}

TEST_CASE("a pool whose lease was taken back lets the attempt go: its late "
          "outcome is fenced, the caller gets the other pool's" *
          doctest::timeout(120)) {
  fixture fx;
  // a's attempt outlives its lease: the test expires the lease by hand, as
  // if a had been cut off from the database for longer than the lease.
  auto gate = std::make_shared<std::atomic<bool>>(false);
  auto started = std::make_shared<std::atomic<int>>(0);
  auto slow = [gate, started](int64_t x) {
    ++*started;
    while (!gate->load())
      std::this_thread::sleep_for(1ms);
    return 2 * x + 1; // a's late result differs from b's
  };
  auto short_lease = pool::pg_options{}.lease(1s);
  auto a = fx.spawn(slow, fx.options(1, short_lease)
                              .kind(pool::worker_kind::dedicated)
                              .max_attempts(2));
  auto ids = fx.enqueue(a, {21});
  REQUIRE(eventually([&] { return started->load() == 1; }, 10s));
  // Expire a's lease by hand, as if a had been cut off for a while (its
  // renewals no longer find it).
  fx.pg.sql("UPDATE pool.operations SET lease_until = 0, owner = 'cut-off' "
            "WHERE id = " +
            std::to_string(ids[0]));
  auto b =
      fx.spawn(twice_after(0ms), fx.options(1, short_lease).max_attempts(2));
  auto results = fx.outcomes(1, 20s);
  CHECK(results[ids[0]] == 42); // b's outcome reached a's caller
  gate->store(true);            // a's attempt ends now: fenced
  REQUIRE(eventually([&] { return fx.stats(a).stale_replies == 1; }, 10s));
  auto sa = fx.stats(a);
  CHECK(sa.leases_lost == 1);
  CHECK(sa.completed == 1);
  auto rec = fx.status(a, ids[0]);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::done);
  CHECK(rec->result.template get_as<int64_t>(0) == 42);
}

TEST_CASE("bad PostgreSQL settings fail at spawn with an error naming them" *
          doctest::timeout(60)) {
  fixture fx;
  auto job = [](int64_t x) { return x; };
  auto fails = [&](pool::pool_options opts, pool::pool_errc code,
                   const std::string& text) {
    auto result = pool::spawn_pool(fx.sys, job, opts.log(pool::silent_log_hook()));
    REQUIRE(!result);
    CHECK(pool::is(result.error(), code));
    auto what = pool::describe(result.error());
    CHECK_MESSAGE(what.find(text) != std::string::npos, what);
  };
  fails(pool::pool_options{}.postgres("host=127.0.0.1 port"),
        pool::pool_errc::invalid_option, "conninfo");
  fails(pool::pool_options{}.postgres(""), pool::pool_errc::invalid_option,
        "postgres");
  fails(pool::pool_options{}.postgres(fx.pg.conninfo()).durable("x.db"),
        pool::pool_errc::invalid_option, "pick one store");
  fails(pool::pool_options{}.postgres(fx.pg.conninfo(),
                                      pool::pg_options{}.lease(10ms)),
        pool::pool_errc::invalid_option, "lease");
  auto port = pool::test::pg_free_port();
  fails(pool::pool_options{}.postgres("host=127.0.0.1 port=" +
                                      std::to_string(port) +
                                      " user=postgres connect_timeout=2"),
        pool::pool_errc::store_failed, "cannot reach the server");
  fails(pool::pool_options{}.postgres(fx.pg.conninfo("nosuchdb")),
        pool::pool_errc::store_failed, "nosuchdb");
  // Nothing half-created.
  CHECK(fx.pg.query("SELECT count(*) FROM pg_namespace WHERE nspname = "
                    "'pool'") == "0");
}

TEST_CASE("the PostgreSQL queue is read from CAF's configuration" *
          doctest::timeout(30)) {
  struct declared : config {
    declared() {
      pool::declare_options(custom_options_);
    }
  };
  declared cfg;
  cfg.set("pool.postgres", "postgres://u@h/db");
  cfg.set("pool.postgres-queue", "mail");
  cfg.set("pool.postgres-lease", caf::timespan{5s});
  cfg.set("pool.postgres-limit", 4);
  auto opts = pool::options_from(cfg);
  REQUIRE_MESSAGE(opts, pool::describe(opts.error()));
  REQUIRE(opts->postgres_conninfo());
  CHECK(*opts->postgres_conninfo() == "postgres://u@h/db");
  CHECK(opts->postgres_options().queue() == "mail");
  CHECK(opts->postgres_options().lease() == caf::timespan{5s});
  CHECK(opts->postgres_options().concurrency_limit() == size_t{4});
  cfg.set("pool.postgres-limit", 0);
  auto bad = pool::options_from(cfg);
  REQUIRE(!bad);
  CHECK(pool::describe(bad.error()).find("postgres_limit") !=
        std::string::npos);
}

TEST_CASE("three pool processes over one queue, one SIGKILLed ten times: "
          "every operation done once with the right result, re-runs only "
          "across kills" *
          doctest::timeout(280)) {
  fixture fx;
  pool::test::temp_dir tmp;
  constexpr long n = 10000;
  std::vector<pid_t> pids(3, 0);
  std::vector<int> starts(3, 0);
  auto log_of = [&](int i) { return tmp.path + "/child" + std::to_string(i); };
  auto lines = [&](int i, const std::string& word) {
    std::ifstream in{log_of(i)};
    std::string line;
    int count = 0;
    while (std::getline(in, line))
      count += line == word ? 1 : 0;
    return count;
  };
  auto start = [&](int i) {
    // The first process submits every input (again after each restart:
    // the unique keys give it the ids it had).
    pids[i] = pool::test::start_process(
        PG_POOL_CHILD,
        {fx.pg.conninfo(), log_of(i), std::to_string(i == 0 ? n : 0)},
        log_of(i) + ".err");
    ++starts[i];
    REQUIRE_MESSAGE(
        eventually([&] { return lines(i, "ready") == starts[i]; }, 30s),
        "child " << i << ": " << pool::test::read_all(log_of(i) + ".err"));
  };
  auto done = [&] {
    return std::stol(fx.pg.query("SELECT count(*) FROM pool.operations "
                                 "WHERE queue = 'chaos' AND state = 2"));
  };
  for (int i = 0; i < 3; ++i)
    start(i);
  auto seed = std::random_device{}();
  MESSAGE("seed " << seed);
  std::mt19937 rng{seed};
  int kills = 0;
  int kills_mid_run = 0;
  for (; kills < 10; ++kills) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(150 + rng() % 350));
    if (done() < n)
      ++kills_mid_run;
    auto i = static_cast<int>(rng() % 3);
    ::kill(pids[i], SIGKILL);
    pool::test::wait_for(pids[i], 10s);
    start(i);
  }
  auto finished = eventually([&] { return done() == n; }, 120s);
  for (auto pid : pids) {
    ::kill(pid, SIGKILL);
    pool::test::wait_for(pid, 10s);
  }
  REQUIRE_MESSAGE(finished, "done " << done() << " of " << n);
  MESSAGE(kills_mid_run << " of " << kills << " kills while work remained");
  CHECK(kills_mid_run >= 5);
  // One row per input, each done.
  CHECK(fx.pg.query("SELECT count(*) FROM pool.operations WHERE queue = "
                    "'chaos'") == std::to_string(n));
  CHECK(fx.pg.query("SELECT count(DISTINCT key) FROM pool.operations WHERE "
                    "queue = 'chaos'") == std::to_string(n));
  // Each result is its input squared (read back through a store).
  auto store = pool::pg_store::open(fx.sys, fx.pg.conninfo(),
                                    pool::pg_options{}.queue("chaos"));
  REQUIRE(store);
  std::istringstream ids{fx.pg.query(
      "SELECT string_agg(id::text, ' ') FROM pool.operations WHERE queue = "
      "'chaos'")};
  long wrong = 0;
  for (uint64_t id = 0; ids >> id;) {
    auto rec = (*store)->lookup(id);
    auto ok = rec && rec->state == pool::operation_state::done &&
              rec->payload.match_elements<int64_t>() &&
              rec->result.match_elements<int64_t>() &&
              rec->result.get_as<int64_t>(0) ==
                  rec->payload.get_as<int64_t>(0) *
                      rec->payload.get_as<int64_t>(0);
    wrong += ok ? 0 : 1;
  }
  CHECK(wrong == 0);
  // Every input ran; more than once only as a kill's price.
  std::map<long, int> runs;
  for (int i = 0; i < 3; ++i) {
    std::ifstream in{log_of(i)};
    std::string word;
    long x = 0;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words{line};
      if (words >> word >> x && word == "ran")
        ++runs[x];
    }
  }
  CHECK(runs.size() == static_cast<size_t>(n));
  long reruns = 0;
  for (auto& [x, count] : runs)
    reruns += count - 1;
  auto lost = std::stol(fx.pg.query("SELECT count(*) FROM pool.failures"));
  MESSAGE("re-runs " << reruns << ", lost leases " << lost << " over "
                     << kills << " kills");
  CHECK(reruns <= 40L * kills);
  CHECK(lost <= 40L * kills);
}

TEST_CASE("the database stopped for 5 s mid-run: submits meanwhile are "
          "acknowledged late, none refused, nothing acknowledged is lost, "
          "and the pool resumes by itself" *
          doctest::timeout(180)) {
  fixture fx;
  auto pool = fx.spawn(twice_after(2ms), fx.options(2, pool::pg_options{}
                                                          .lease(2s)));
  std::vector<int64_t> first;
  for (int64_t i = 1; i <= 200; ++i)
    first.push_back(i);
  auto ids = fx.enqueue(pool, first);
  auto before = fx.outcomes(50, 30s);
  // More submits, on their way while the server goes down.
  for (int64_t i = 201; i <= 300; ++i)
    fx.self->send(pool, pool::enqueue_atom_v, i);
  fx.pg.restart(5s);
  size_t refused = 0;
  std::map<uint64_t, int64_t> results = before;
  std::set<uint64_t> acked{ids.begin(), ids.end()};
  std::vector<std::string> errors;
  bool timed_out = false;
  size_t answers = 0;
  while ((answers < 100 || results.size() < acked.size()) && !timed_out)
    fx.self->receive(
        [&](uint64_t id) {
          ++answers;
          acked.insert(id);
        },
        [&](caf::error& err) {
          ++answers;
          ++refused;
          errors.push_back(pool::describe(err));
        },
        [&](pool::op_done_atom, uint64_t id, caf::message& result) {
          results[id] = result.get_as<int64_t>(0);
        },
        [&](pool::op_failed_atom, uint64_t id, caf::error& err) {
          FAIL("op#" << id << " failed: " << pool::describe(err));
        },
        caf::after(60s) >> [&] { timed_out = true; });
  MESSAGE(acked.size() << " acknowledged, " << refused << " refused"
                       << (errors.empty() ? "" : ", e.g. " + errors.front()));
  REQUIRE_MESSAGE(!timed_out, answers << " answers, " << results.size()
                                      << " outcomes of " << acked.size());
  CHECK(refused == 0);
  for (auto& err : errors)
    MESSAGE(err);
  // Every acknowledged operation is done, in the database too.
  for (auto id : acked) {
    REQUIRE(results.count(id) == 1);
    CHECK(results[id] % 2 == 0);
  }
  CHECK(eventually(
      [&] {
        return fx.pg.query("SELECT count(*) FROM pool.operations WHERE "
                           "state = 2") == std::to_string(acked.size());
      },
      30s));
  // The pool works as before.
  auto again = fx.enqueue(pool, {1000});
  CHECK(fx.outcomes(1, 30s)[again[0]] == 2000);
}
