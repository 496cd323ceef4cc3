// Faults of a pool over PostgreSQL, on the real scheduler against a private
// PostgreSQL 15 server (tests/pg_fixture.hpp): the server stopped, killed
// with SIGKILL, every connection dropped, a failover to a standby behind
// the same name, an outage longer than the pool
// waits; attempts spent only by running: a pool that stops gives back what
// it holds at once, a drain's deadline gives back the running attempt, and
// a SIGKILLed process's claims come back without waiting for its leases.
#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
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

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

// Counts how often each input ran.
struct run_counts {
  std::mutex mtx;
  std::map<int64_t, int> runs;

  void ran(int64_t x) {
    std::lock_guard<std::mutex> guard{mtx};
    ++runs[x];
  }

  std::map<int64_t, int> get() {
    std::lock_guard<std::mutex> guard{mtx};
    return runs;
  }
};

// The cluster comes first: it forks before the actor system starts threads.
struct fixture {
  pool::test::pg_cluster pg;
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  /// What the pools connect to, and the server the checks read.
  std::string conninfo = pg.conninfo();
  pool::test::pg_cluster* db = &pg;

  pool::pool_options options(size_t workers, pool::pg_options pg_opts = {}) {
    return pool::pool_options{}
        .workers(workers)
        .postgres(conninfo, std::move(pg_opts))
        .log(pool::silent_log_hook());
  }

  template <class F>
  caf::actor spawn(F fn, pool::pool_options opts) {
    auto result = pool::spawn_pool(sys, std::move(fn), std::move(opts));
    REQUIRE_MESSAGE(result, pool::describe(result.error()));
    return *result;
  }

  long count(const std::string& where) {
    return std::stol(db->query("SELECT count(*) FROM pool.operations WHERE "
                               + where));
  }

  long failures() {
    return std::stol(db->query("SELECT count(*) FROM pool.failures"));
  }
};

// Opens a job's gate when the test ends, also when it fails: a stuck job's
// thread would keep the actor system from ending.
struct open_at_exit {
  std::shared_ptr<std::atomic<bool>> gate;
  ~open_at_exit() {
    gate->store(true);
  }
};

// What a caller saw of an enqueue stream: ids, refusals, outcomes.
struct seen {
  std::set<uint64_t> acked;
  std::vector<std::string> refused;
  std::map<uint64_t, int64_t> done;
  std::vector<std::string> failed;
  size_t answers = 0;
};

// Receives until `answers` acks or refusals and (with `outcomes`) an
// outcome for every ack arrived, or `within` passed without a message.
void receive_all(fixture& fx, seen& s, size_t answers, caf::timespan within,
                 bool outcomes = true) {
  bool timed_out = false;
  while ((s.answers < answers
          || (outcomes && s.done.size() + s.failed.size() < s.acked.size()))
         && !timed_out)
    fx.self->receive(
        [&](uint64_t id) {
          ++s.answers;
          s.acked.insert(id);
        },
        [&](caf::error& err) {
          ++s.answers;
          s.refused.push_back(pool::describe(err));
        },
        [&](pool::op_done_atom, uint64_t id, caf::message& result) {
          s.done[id] = result.get_as<int64_t>(0);
        },
        [&](pool::op_failed_atom, uint64_t id, caf::error& err) {
          s.failed.push_back("op#" + std::to_string(id) + ": "
                             + pool::describe(err));
        },
        caf::after(within) >> [&] { timed_out = true; });
  REQUIRE_MESSAGE(!timed_out, s.answers << " answers of " << answers << ", "
                                        << s.done.size() << " outcomes of "
                                        << s.acked.size() << " acked");
}

// Runs 300 operations through one pool (2 workers, lease 2 s: the
// outages below outlast it) while `fault` strikes after the first 50
// outcomes, with 100 submits on their way and 50 more sent during it.
void ride_out(fixture& fx, const std::function<void()>& fault,
              const std::function<void()>& recover) {
  auto counts = std::make_shared<run_counts>();
  auto job = [counts](int64_t x) {
    counts->ran(x);
    std::this_thread::sleep_for(2ms);
    return 2 * x;
  };
  auto pool = fx.spawn(job, fx.options(2, pool::pg_options{}.lease(2s)));
  seen s;
  for (int64_t i = 1; i <= 150; ++i)
    fx.self->send(pool, pool::enqueue_atom_v, i);
  REQUIRE(eventually([&] { return counts->get().size() >= 50; }, 30s));
  for (int64_t i = 151; i <= 250; ++i)
    fx.self->send(pool, pool::enqueue_atom_v, i);
  auto struck = clock_type::now();
  fault();
  for (int64_t i = 251; i <= 300; ++i)
    fx.self->send(pool, pool::enqueue_atom_v, i);
  recover();
  receive_all(fx, s, 300, 120s); // (the 60 s outage sends nothing)
  MESSAGE(s.acked.size() << " acknowledged, " << s.refused.size()
                         << " refused, all done " << seconds_since(struck)
                         << " s after the fault");
  // Nothing refused, nothing failed: the outage was latency.
  CHECK(s.refused.empty());
  for (auto& x : s.refused)
    MESSAGE(x);
  CHECK(s.failed.empty());
  for (auto& x : s.failed)
    MESSAGE(x);
  CHECK(s.acked.size() == 300);
  for (auto& [id, result] : s.done)
    CHECK(result % 2 == 0);
  // Every operation done in the database, each ran; no attempt was lost
  // (the leases survive the outage).
  CHECK(eventually([&] { return fx.count("state = 2") == 300; }, 30s));
  auto runs = counts->get();
  CHECK(runs.size() == 300);
  long again = 0;
  for (auto& [x, n] : runs)
    again += n - 1;
  // Re-runs are bounded by the leases in flight: a claim whose
  // transaction the fault rolled back (at most one claim batch) runs again
  // what it had handed out.
  MESSAGE(again << " ran twice, " << fx.failures() << " lost leases");
  CHECK(again <= static_cast<long>(pool::pg_options{}.claim_batch()));
  CHECK(fx.failures() == 0);
  // The pool goes on as before and stops cleanly.
  fx.self->send(pool, pool::enqueue_atom_v, int64_t{1000});
  seen after;
  receive_all(fx, after, 1, 30s);
  CHECK(after.done.begin()->second == 2000);
  fx.self->request(pool, 30s, pool::drain_atom_v)
      .receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
}

// ride_out with the server stopped (fast shutdown) for `outage`.
void stopped_for(fixture& fx, std::chrono::seconds outage) {
  ride_out(
      fx, [&] { fx.pg.stop(); },
      [&] {
        std::this_thread::sleep_for(outage); // the outage under test
        fx.pg.start();
      });
}

} // namespace

TEST_CASE("the server stopped for 5 s mid-run: submits meanwhile are "
          "acknowledged late, none refused, every operation done" *
          doctest::timeout(180)) {
  fixture fx;
  stopped_for(fx, 5s);
}

TEST_CASE("the server stopped for 60 s mid-run: longer than every lease "
          "and reconnect wait, still only latency" *
          doctest::timeout(240)) {
  fixture fx;
  stopped_for(fx, 60s);
}

TEST_CASE("the server killed with SIGKILL mid-run and started again: "
          "nothing committed or accepted is lost, every operation done" *
          doctest::timeout(180)) {
  fixture fx;
  ride_out(
      fx, [&] { fx.pg.kill_server(); },
      [&] {
        std::this_thread::sleep_for(3s); // the outage under test
        fx.pg.start();
      });
}

TEST_CASE("every connection of the pool dropped mid-run: it reconnects by "
          "itself and nobody takes its leases" *
          doctest::timeout(180)) {
  fixture fx;
  ride_out(
      fx,
      [&] {
        fx.pg.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                  "WHERE application_name = 'caf-pool'");
      },
      [] {});
}

TEST_CASE("a failover to a standby behind the same name: the pool follows "
          "the name, nothing committed is lost, every operation done" *
          doctest::timeout(180)) {
  fixture fx;
  // The name: a link to the primary's socket directory, which the
  // failover points at the standby's (as a DNS name or a virtual address
  // moves). Replication is synchronous: a commit is on both servers.
  pool::test::pg_cluster standby{pool::test::standby_of{}, fx.pg};
  fx.pg.sql("ALTER SYSTEM SET synchronous_standby_names = '*'");
  fx.pg.sql("SELECT pg_reload_conf()");
  auto name = fx.pg.dir + "-name";
  REQUIRE(::symlink(fx.pg.dir.c_str(), name.c_str()) == 0);
  struct unlink_at_exit {
    std::string path;
    ~unlink_at_exit() {
      ::unlink(path.c_str());
    }
  } guard{name};
  fx.conninfo = "host=" + name + " port=" + std::to_string(fx.pg.port)
                + " dbname=postgres user=postgres";
  REQUIRE(eventually(
    [&] { return !fx.pg.query("SELECT 1 FROM pg_stat_replication WHERE "
                              "sync_state = 'sync'").empty(); },
    30s));
  ride_out(
    fx, [&] { fx.pg.stop(); },
    [&] {
      standby.promote();
      auto next = name + ".next";
      REQUIRE(::symlink(standby.dir.c_str(), next.c_str()) == 0);
      REQUIRE(::rename(next.c_str(), name.c_str()) == 0);
      fx.db = &standby;
    });
  // The promoted standby holds every operation, the one submitted after
  // the primary had stopped included: the pool wrote there.
  CHECK(fx.count("true") == 301);
}

TEST_CASE("an outage longer than outage_limit: the submits that waited are "
          "refused naming the limit, outcomes are recorded once the server "
          "is back, and the pool goes on" *
          doctest::timeout(120)) {
  fixture fx;
  auto pool = fx.spawn([](int64_t x) { return 2 * x; },
                       fx.options(2, pool::pg_options{}.outage_limit(2s)));
  seen s;
  for (int64_t i = 1; i <= 20; ++i)
    fx.self->send(pool, pool::enqueue_atom_v, i);
  receive_all(fx, s, 20, 30s);
  fx.pg.stop();
  auto stopped = clock_type::now();
  for (int64_t i = 21; i <= 40; ++i)
    fx.self->send(pool, pool::enqueue_atom_v, i);
  receive_all(fx, s, 40, 30s);
  auto waited = seconds_since(stopped);
  MESSAGE("refused after " << waited << " s: "
                           << (s.refused.empty() ? "" : s.refused.front()));
  REQUIRE(s.refused.size() == 20);
  CHECK(waited >= 2.0);
  CHECK(waited < 5.0);
  for (auto& x : s.refused)
    CHECK_MESSAGE(x.find("outage_limit") != std::string::npos, x);
  fx.pg.start();
  // Submitted at once: the pool has not reached the server again yet (its
  // connection waits between attempts), and the outage outlasted the limit
  // long ago; the submit waits for the next attempt, not refused by the
  // last one.
  seen after;
  fx.self->send(pool, pool::enqueue_atom_v, int64_t{7});
  receive_all(fx, after, 1, 30s);
  for (auto& x : after.refused)
    MESSAGE("refused after the outage: " << x);
  for (auto& x : after.failed)
    MESSAGE("failed after the outage: " << x);
  REQUIRE(after.done.size() == 1);
  CHECK(after.done.begin()->second == 14);
  CHECK(eventually([&] { return fx.count("state = 2") == 21; }, 30s));
  CHECK(fx.count("true") == 21); // the refused ones were not stored
}

TEST_CASE("a pool that stops gives back what it holds at once: another pool "
          "runs it as the same attempt, no attempt spent" *
          doctest::timeout(120)) {
  fixture fx;
  auto gate = std::make_shared<std::atomic<bool>>(false);
  open_at_exit guard{gate};
  auto started = std::make_shared<std::atomic<int>>(0);
  auto stuck = [gate, started](int64_t x) {
    ++*started;
    while (!gate->load())
      std::this_thread::sleep_for(1ms);
    return 2 * x;
  };
  auto a = fx.spawn(stuck, fx.options(1).kind(pool::worker_kind::dedicated));
  for (int64_t i = 1; i <= 40; ++i)
    fx.self->send(a, pool::enqueue_atom_v, i);
  REQUIRE(eventually([&] { return started->load() == 1; }, 10s));
  REQUIRE(eventually([&] { return fx.count("state = 1") >= 2; }, 10s));
  auto held = fx.count("state = 1");
  // Stopped, not drained: its caller hears pool_terminated.
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  a = nullptr;
  auto stopped = clock_type::now();
  REQUIRE(eventually([&] { return fx.count("state = 1") == 0; }, 10s));
  MESSAGE("a held " << held << " (1 running), gave them back in "
                    << seconds_since(stopped) << " s");
  auto b = fx.spawn([](int64_t x) { return 2 * x; }, fx.options(2));
  REQUIRE(eventually([&] { return fx.count("state = 2") == 40; }, 20s));
  gate->store(true);
  MESSAGE("b ran all 40 within " << seconds_since(stopped) << " s of the stop");
  CHECK(seconds_since(stopped) < 15); // the lease is 30 s
  CHECK(fx.count("attempt = 1") == 40);
  CHECK(fx.failures() == 0);
  fx.self->request(b, 30s, pool::drain_atom_v)
      .receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE("a drain whose deadline passes gives the running attempt back "
          "unstarted: another pool runs it as the same attempt" *
          doctest::timeout(120)) {
  fixture fx;
  auto gate = std::make_shared<std::atomic<bool>>(false);
  open_at_exit guard{gate};
  auto started = std::make_shared<std::atomic<int>>(0);
  auto stuck = [gate, started](int64_t x) {
    ++*started;
    while (!gate->load())
      std::this_thread::sleep_for(1ms);
    return 2 * x + 1;
  };
  auto a = fx.spawn(stuck, fx.options(1).kind(pool::worker_kind::dedicated));
  seen s;
  fx.self->send(a, pool::enqueue_atom_v, int64_t{21});
  receive_all(fx, s, 1, 10s, false);
  REQUIRE(eventually([&] { return started->load() == 1; }, 10s));
  fx.self->request(a, 30s, pool::drain_atom_v, caf::timespan{500ms})
      .receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
  receive_all(fx, s, 1, 10s);
  REQUIRE(s.failed.size() == 1);
  CHECK(s.failed.front().find("drain_deadline") != std::string::npos);
  // Back in the queue as it was: queued, attempt 1, no failure.
  CHECK(eventually([&] { return fx.count("state = 0") == 1; }, 10s));
  CHECK(fx.count("attempt = 1") == 1);
  auto b = fx.spawn([](int64_t x) { return 2 * x; }, fx.options(1));
  CHECK(eventually([&] { return fx.count("state = 2") == 1; }, 20s));
  gate->store(true); // a's late result is stale
  CHECK(fx.count("attempt = 1") == 1);
  CHECK(fx.failures() == 0);
  auto store = pool::pg_store::open(fx.sys, fx.pg.conninfo());
  REQUIRE(store);
  auto rec = (*store)->lookup(*s.acked.begin());
  REQUIRE(rec);
  CHECK(rec->result.get_as<int64_t>(0) == 42); // b's
}

TEST_CASE("a process SIGKILLed with claims it never started: they come back "
          "within seconds, not after its lease, and cost no attempt, but the "
          "one it ran is a failed attempt" *
          doctest::timeout(120)) {
  fixture fx;
  pool::test::temp_dir tmp;
  auto log = tmp.path + "/child";
  // 40 operations, one worker whose job hangs, a lease of 30 s.
  auto pid = pool::test::start_process(
      PG_POOL_CHILD, {fx.pg.conninfo(), log, "40", "60000", "30", "1"},
      log + ".err");
  struct kill_at_exit {
    pid_t pid;
    ~kill_at_exit() {
      ::kill(pid, SIGKILL);
    }
  } guard{pid};
  auto ran = [&] {
    std::ifstream in{log};
    std::string line;
    int n = 0;
    while (std::getline(in, line))
      n += line.rfind("ran ", 0) == 0 ? 1 : 0;
    return n;
  };
  REQUIRE_MESSAGE(eventually([&] { return ran() == 1; }, 30s),
                  pool::test::read_all(log + ".err"));
  // The running one is noted as handed out (its group commits at once),
  // the rest of the claim is not.
  auto started = [&] {
    return std::stol(fx.pg.query(
        "SELECT count(*) FROM pool.operations o JOIN pool.owners w USING "
        "(owner) WHERE o.state = 1 AND o.handout <= w.handed"));
  };
  REQUIRE(eventually([&] { return started() == 1; }, 10s));
  auto held = fx.count("state = 1");
  MESSAGE("the child holds " << held << " entries, 1 of them running");
  CHECK(held >= 2);
  ::kill(pid, SIGKILL);
  pool::test::wait_for(pid, 10s);
  auto killed = clock_type::now();
  auto counts = std::make_shared<run_counts>();
  auto b = fx.spawn(
      [counts](int64_t x) {
        counts->ran(x);
        return x * x;
      },
      // (The attempt that ran in the killed process was spent: a second.)
      fx.options(2, pool::pg_options{}.queue("chaos")).max_attempts(2));
  REQUIRE_MESSAGE(
      eventually([&] { return fx.count("state = 2") == 40; }, 25s),
      fx.count("state = 2") << " done, " << fx.count("state = 1")
                            << " still leased");
  auto took = seconds_since(killed);
  MESSAGE("all 40 done " << took << " s after the kill (lease: 30 s)");
  CHECK(took < 10); // (grace: 2 s after connecting, 2 s absent)
  // The running one: attempt 2, its lost attempt in the history; every
  // other one ran once, as attempt 1.
  CHECK(fx.count("attempt = 1") == 39);
  CHECK(fx.count("attempt = 2") == 1);
  REQUIRE(fx.failures() == 1);
  CHECK(counts->get().size() == 40);
  auto store = pool::pg_store::open(fx.sys, fx.pg.conninfo(),
                                    pool::pg_options{}.queue("chaos"));
  REQUIRE(store);
  auto id = std::stoull(
      fx.pg.query("SELECT id FROM pool.operations WHERE attempt = 2"));
  auto rec = (*store)->lookup(id);
  REQUIRE(rec);
  REQUIRE(rec->history.size() == 1);
  CHECK(pool::is(rec->history[0].reason, pool::pool_errc::lease_lost));
  CHECK(pool::describe(rec->history[0].reason).find("is gone")
        != std::string::npos);
  fx.self->request(b, 30s, pool::drain_atom_v)
      .receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
}
