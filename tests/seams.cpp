// Where two features meet, on CAF's testing scheduler: the capacity with
// the dispatch mechanisms, parked submits with resizes and drains, one
// consistent stats snapshot, and internal messages from strangers. Each
// case failed before the core redesign fixed it.
#include <doctest/doctest.h>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;

namespace {

auto twice = [](int x) { return x * 2; };

/// An actor that sends `msg` to `dest` once, as itself.
caf::actor stranger(caf::actor_system& sys, caf::actor dest, caf::message msg) {
  return sys.spawn(
      [dest, msg](caf::event_based_actor* self) { self->send(dest, msg); });
}

/// Checks the stats identity: everything taken in is accounted for.
void check_identity(const pool::pool_stats& st) {
  CHECK(st.available + st.delayed + st.held + st.parked ==
        st.submitted - st.completed - st.failed - st.cancelled -
            st.deduplicated);
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "capacity holds with entries taken out ahead: they still "
                  "wait, so a submit over capacity is refused" *
                      doctest::timeout(30)) {
  auto pool = spawn_with(
      twice, pool::pool_options{}.workers(1).capacity(2).lookahead(false));
  run();
  frozen = "pool.worker";                   // stuck in its first job
  self->send(pool, pool::submit_atom_v, 1); // runs, once the queue handed
  run();                                    // it out
  self->send(pool, pool::submit_atom_v, 2); // waits (taken out ahead)
  self->send(pool, pool::submit_atom_v, 3); // waits
  run();
  auto st = stats_of(pool);
  CHECK(st.available == 2);
  auto over = ask(pool, caf::make_message(pool::submit_atom_v, 4));
  CHECK(pool::is(over, pool::pool_errc::overloaded));
  st = stats_of(pool);
  CHECK(st.available == 2);
  CHECK(st.rejected == 1);
  frozen.clear();
}

TEST_CASE_FIXTURE(deterministic,
                  "capacity holds with lookahead on: an entry sent ahead to "
                  "a busy worker still waits, so a submit over capacity is "
                  "refused" *
                      doctest::timeout(30)) {
  auto pool = spawn_with(twice, pool::pool_options{}.workers(1).capacity(2));
  run();
  frozen = "pool.worker";                   // stuck in its first job
  self->send(pool, pool::submit_atom_v, 1); // runs, once the queue handed
  run();                                    // it out
  self->send(pool, pool::submit_atom_v, 2); // waits (sent ahead)
  self->send(pool, pool::submit_atom_v, 3); // waits
  run();
  auto st = stats_of(pool);
  CHECK(st.sent_ahead == 1);
  CHECK(st.available == 2);
  auto over = ask(pool, caf::make_message(pool::submit_atom_v, 4));
  CHECK(pool::is(over, pool::pool_errc::overloaded));
  st = stats_of(pool);
  CHECK(st.available == 2);
  CHECK(st.rejected == 1);
  check_identity(st);
  frozen.clear();
}

TEST_CASE_FIXTURE(deterministic,
                  "wait_when_full: at most m submits park, the next is "
                  "refused at once with the depth, and they go in in order" *
                      doctest::timeout(30)) {
  auto log = std::make_shared<std::vector<int>>();
  auto logged = [log](int x) {
    log->push_back(x);
    return x;
  };
  auto pool = spawn_with(
      logged, pool::pool_options{}.workers(1).capacity(1).wait_when_full(2));
  run();
  frozen = "pool.worker";
  self->send(pool, pool::submit_atom_v, 1); // runs, once the queue handed
  run();                                    // it out
  for (int i = 2; i <= 4; ++i)
    self->send(pool, pool::submit_atom_v, i); // 2 waits, 3 4 park
  run();
  CHECK(stats_of(pool).parked == 2);
  auto err = ask(pool, caf::make_message(pool::submit_atom_v, 5));
  CHECK(pool::is(err, pool::pool_errc::overloaded));
  CHECK(pool::describe(err).find("queue depth 1") != std::string::npos);
  frozen.clear();
  run();
  CHECK(*log == std::vector<int>{1, 2, 3, 4});
}

TEST_CASE_FIXTURE(deterministic,
                  "parked submits go in as soon as a resize makes room, not "
                  "when a job finishes" *
                      doctest::timeout(30)) {
  auto pool = spawn_with(
      twice, pool::pool_options{}.workers(6).capacity(6).wait_when_full(6));
  run();
  frozen = "pool.worker"; // the first six are stuck in their jobs
  frozen_work_only = true; // (new ones can ask, and get stuck too)
  // (A submit counts against the capacity until the queue has handed it
  // to a worker: the first six reach their workers before the rest come.)
  for (int i = 0; i < 6; ++i)
    self->send(pool, pool::submit_atom_v, i);
  run();
  for (int i = 6; i < 18; ++i)
    self->send(pool, pool::submit_atom_v, i);
  run();
  auto st = stats_of(pool);
  CHECK(st.busy == 6);
  CHECK(st.available == 6);
  CHECK(st.parked == 6);
  // Six more workers take the six waiting entries: room for the parked.
  CHECK(!ask(pool, caf::make_message(pool::resize_atom_v, uint64_t{12})));
  run();
  st = stats_of(pool);
  CHECK(st.parked == 0);
  CHECK(st.available == 6);
  check_identity(st);
  // And a new submit still comes after every parked one.
  frozen.clear();
  run();
  CHECK(stats_of(pool).completed == 18);
}

TEST_CASE_FIXTURE(deterministic,
                  "drain with a deadline: at the deadline queued and parked "
                  "work fails at once and the drain is answered without "
                  "waiting for a stuck attempt" *
                      doctest::timeout(30)) {
  auto pool = spawn_with(
      twice, pool::pool_options{}.workers(1).capacity(1).wait_when_full(2));
  run();
  frozen = "pool.worker"; // stuck for good
  auto stuck = self->request(pool, caf::infinite, pool::submit_atom_v, 1);
  auto queued = self->request(pool, caf::infinite, pool::submit_atom_v, 2);
  auto parked = self->request(pool, caf::infinite, pool::submit_atom_v, 3);
  run();
  CHECK(stats_of(pool).parked == 1);
  auto drained =
      self->request(pool, caf::infinite, pool::drain_atom_v, caf::timespan{5s});
  run();
  advance(5s);
  auto is_deadline = [](caf::error& err) {
    CHECK(pool::is(err, pool::pool_errc::drain_deadline));
  };
  for (auto* x : {&stuck, &queued, &parked})
    x->receive([](int) { FAIL("ran"); }, is_deadline);
  bool answered = false;
  drained.receive([&] { answered = true; },
                  [](caf::error& err) { FAIL(pool::describe(err)); });
  CHECK(answered);
  frozen.clear();
}

TEST_CASE_FIXTURE(deterministic,
                  "one stats snapshot is consistent, whatever arrives "
                  "between the request and its answer" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 2);
  run();
  for (int round = 0; round < 10; ++round) {
    // The stats request first, then a submit from someone else.
    auto query = self->request(pool, caf::infinite, pool::pool_stats_atom_v);
    stranger(
        sys, pool,
        caf::make_message(pool::submit_after_atom_v, caf::timespan{1h}, round));
    run();
    query.receive([](pool::pool_stats& st) { check_identity(st); },
                  [](caf::error& err) { FAIL(pool::describe(err)); });
    check_identity(stats_of(pool));
  }
}

TEST_CASE_FIXTURE(deterministic, "a stranger's timer messages change nothing" *
                                     doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  run();
  frozen = "pool.worker";
  auto answer = self->request(pool, caf::infinite, pool::submit_atom_v, 21);
  run();
  // No attempt timeout is configured; a forged one must not fail the job,
  // nor a forged drain deadline fail pending work.
  for (auto kind : {pool::timer_kind::attempt, pool::timer_kind::drain,
                    pool::timer_kind::resize_step, pool::timer_kind::probe}) {
    pool::timer_event ev{kind, pool::attempt_id{1, 1}, pool::worker_ref{0, 1}};
    stranger(sys, pool, caf::make_message(ev));
    run();
  }
  auto st = stats_of(pool);
  CHECK(st.timed_out == 0);
  CHECK(st.failed == 0);
  CHECK(st.busy == 1);
  frozen.clear();
  run();
  answer.receive([](int y) { CHECK(y == 42); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic, "a stranger's queue answers change nothing" *
                                     doctest::timeout(30)) {
  auto pool = spawn(twice, 2);
  run();
  pool::queue_counts lots;
  lots.available = 50;
  stranger(sys, pool, caf::make_message(lots));
  stranger(sys, pool, caf::make_message(pool::no_work_atom_v, 1s));
  run();
  auto st = stats_of(pool);
  CHECK(st.sleeping == 2); // nobody woken for work that does not exist
  CHECK(st.available == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "join_pool refuses the pool itself" * doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  run();
  auto err = ask(pool, caf::make_message(pool::join_pool_atom_v, pool));
  CHECK(pool::is(err, pool::pool_errc::unexpected_message));
  CHECK(stats_of(pool).workers == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "a joined worker that never asks for work is dropped after "
                  "10 s and told, the work goes to another worker" *
                      doctest::timeout(30)) {
  auto pool = spawn_plain(twice, 1);
  run();
  join_as_worker(pool); // the scoped actor: most recent sleeper
  auto answer = self->request(pool, caf::infinite, pool::submit_atom_v, 4);
  run();
  CHECK(stats_of(pool).waiting == 1); // woken, silent
  advance(10s);
  REQUIRE(replies() >= 2);
  self->receive([](pool::wake_up_atom) {});
  self->receive([](pool::left_pool_atom, const caf::error& reason) {
    CHECK(pool::is(reason, pool::pool_errc::worker_down));
  });
  auto st = stats_of(pool);
  CHECK(st.workers == 1);
  CHECK(st.workers_dropped == 1);
  answer.receive([](int y) { CHECK(y == 8); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "a resize past the upper bound is refused with a clear "
                  "error, the pool unchanged" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 2);
  run();
  auto err =
      ask(pool, caf::make_message(pool::resize_atom_v, uint64_t{2'000'000}));
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(pool::describe(err).find("at most 1000000") != std::string::npos);
  CHECK(stats_of(pool).configured == 2);
}

TEST_CASE_FIXTURE(deterministic,
                  "a large resize goes in steps: stats are answered between "
                  "them" *
                      doctest::timeout(60)) {
  auto pool = spawn(twice, 2);
  run();
  auto resized =
      self->request(pool, caf::infinite, pool::resize_atom_v, uint64_t{10'000});
  auto query = self->request(pool, caf::infinite, pool::pool_stats_atom_v);
  run();
  // The stats request was answered while the resize was still going.
  query.receive(
      [](pool::pool_stats& st) {
        CHECK(st.workers > 2);
        CHECK(st.workers < 10'000);
      },
      [](caf::error& err) { FAIL(pool::describe(err)); });
  resized.receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
  CHECK(stats_of(pool).workers == 10'000);
  CHECK(!ask(pool, caf::make_message(pool::resize_atom_v, uint64_t{2})));
  CHECK(stats_of(pool).workers == 2);
}
