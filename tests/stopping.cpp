// Cancellation, drain and abort, step by step on CAF's testing scheduler.
#include <doctest/doctest.h>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;

namespace {

auto triple = [](int x) { return x * 3; };

/// Enqueues `x` and returns its operation id.
uint64_t enqueue(deterministic& t, const caf::actor& pool, int x) {
  uint64_t id = 0;
  auto answer = t.self->request(pool, caf::infinite, pool::enqueue_atom_v, x);
  t.run();
  answer.receive([&](uint64_t op) { id = op; },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
  return id;
}

caf::error cancel(deterministic& t, const caf::actor& pool, uint64_t id) {
  return t.ask(pool, caf::make_message(pool::cancel_op_atom_v, id));
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "an enqueued operation reports its id, then its outcome" *
                      doctest::timeout(30)) {
  auto pool = spawn(triple, 1);
  run();
  auto id = enqueue(*this, pool, 5);
  CHECK(id > 0);
  run();
  self->receive([&](pool::op_done_atom, uint64_t op, caf::message& result) {
    CHECK(op == id);
    CHECK(result.get_as<int>(0) == 15);
  });
}

TEST_CASE_FIXTURE(deterministic,
                  "cancelling a queued operation removes it and tells its "
                  "caller once" *
                      doctest::timeout(30)) {
  auto pool = spawn(triple, 1);
  run();
  // Operation ids count from 1 per pool.
  self->send(pool, pool::submit_after_atom_v, caf::timespan{1h}, 1);
  auto later = self->request(pool, caf::infinite, pool::submit_after_atom_v,
                             caf::timespan{1h}, 2);
  run();
  CHECK(stats_of(pool).delayed == 2);
  CHECK(!cancel(*this, pool, 2));
  REQUIRE(replies() == 1);
  later.receive([](int) { FAIL("ran"); },
                [](caf::error& err) {
                  CHECK(pool::is(err, pool::pool_errc::cancelled));
                });
  auto st = stats_of(pool);
  CHECK(st.delayed == 1);
  CHECK(st.cancelled == 1);
  // Cancelling it again: unknown, not a crash.
  auto again = cancel(*this, pool, 2);
  CHECK(pool::is(again, pool::pool_errc::unknown_operation));
  // Its deadline passes: nothing runs for it.
  CHECK(count(advance(1h), "work_to_do") == 1); // only operation 1
}

TEST_CASE_FIXTURE(deterministic,
                  "cancelling a running operation discards its result" *
                      doctest::timeout(30)) {
  auto pool = spawn(triple, 1);
  join_as_worker(pool);
  auto id = enqueue(*this, pool, 7);
  auto held = take_work(pool);
  REQUIRE(held.id.operation == id);
  CHECK(!cancel(*this, pool, id));
  self->receive([&](pool::op_failed_atom, uint64_t op, caf::error& err) {
    CHECK(op == id);
    CHECK(pool::is(err, pool::pool_errc::cancelled));
  });
  // The worker finishes anyway; its result is dropped, not delivered.
  self->send(pool, pool::status_reply_atom_v, held.id, caf::make_message(21));
  run();
  CHECK(replies() == 0);
  CHECK(stats_of(pool).stale_replies == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "cancelling an unknown id answers unknown_operation" *
                      doctest::timeout(30)) {
  auto pool = spawn(triple, 1);
  auto err = cancel(*this, pool, 4242);
  CHECK(pool::is(err, pool::pool_errc::unknown_operation));
  CHECK(pool::describe(err) == "pool.unknown_operation: op#4242");
}

TEST_CASE_FIXTURE(deterministic,
                  "drain refuses new work, finishes queued, delayed and "
                  "running work, then replies and stops" *
                      doctest::timeout(30)) {
  auto pool = spawn(triple, 2);
  self->monitor(pool);
  run();
  self->send(pool, pool::submit_atom_v, 1);
  self->send(pool, pool::submit_after_atom_v, caf::timespan{10s}, 2);
  auto drained = self->request(pool, caf::infinite, pool::drain_atom_v);
  auto refused = self->request(pool, caf::infinite, pool::submit_atom_v, 3);
  run();
  // The due one ran; the new submit was refused; the drain still waits.
  std::vector<int> results;
  self->receive([&](int y) { results.push_back(y); });
  refused.receive(
      [](int) { FAIL("accepted while draining"); },
      [](caf::error& err) { CHECK(pool::is(err, pool::pool_errc::closed)); });
  CHECK(replies() == 0);
  advance(10s);
  self->receive([&](int y) { results.push_back(y); });
  CHECK(results == std::vector<int>{3, 6});
  bool done = false;
  drained.receive([&] { done = true; },
                  [](caf::error& err) { FAIL(pool::describe(err)); });
  CHECK(done);
  self->receive([](caf::down_msg& msg) { CHECK(!msg.reason); });
}

TEST_CASE_FIXTURE(
    deterministic,
    "drain with a deadline fails what is left with a clear error" *
        doctest::timeout(30)) {
  auto pool = spawn(triple, 1);
  run();
  auto late = self->request(pool, caf::infinite, pool::submit_after_atom_v,
                            caf::timespan{1h}, 1);
  auto drained =
      self->request(pool, caf::infinite, pool::drain_atom_v, caf::timespan{5s});
  run();
  CHECK(replies() == 0);
  advance(5s - 1ns);
  CHECK(replies() == 0);
  advance(1ns);
  late.receive([](int) { FAIL("ran"); },
               [](caf::error& err) {
                 CHECK(pool::is(err, pool::pool_errc::drain_deadline));
               });
  drained.receive([] {}, [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "abort: every pending caller gets the termination error and "
                  "no pool actor keeps running" *
                      doctest::timeout(30)) {
  auto baseline = sys.registry().running();
  auto pool = spawn(triple, 3);
  run();
  CHECK(sys.registry().running() == baseline + 5); // shepherd, queue, 3
  auto a = self->request(pool, caf::infinite, pool::submit_after_atom_v,
                         caf::timespan{1h}, 1);
  auto b = self->request(pool, caf::infinite, pool::submit_after_atom_v,
                         caf::timespan{2h}, 2);
  run();
  self->send_exit(pool, caf::exit_reason::user_shutdown);
  run();
  for (auto* h : {&a, &b})
    h->receive([](int) { FAIL("ran"); },
               [](caf::error& err) {
                 CHECK(pool::is(err, pool::pool_errc::pool_terminated));
               });
  pool = caf::actor{};
  drain();
  CHECK(sys.registry().running() == baseline);
}

namespace {

/// Submits one operation due in an hour, then terminates.
caf::behavior short_lived_caller(caf::event_based_actor* self,
                                 caf::actor pool) {
  self->request(pool, caf::infinite, pool::submit_after_atom_v,
                caf::timespan{1h}, 1)
      .then([](int) {}, [](caf::error&) {});
  self->quit();
  return {};
}

size_t runs_after_caller_died(deterministic& t, bool skip_orphaned) {
  auto pool = pool::spawn_pool(
      t.sys, triple,
      pool::pool_options{}.workers(1).skip_orphaned(skip_orphaned));
  REQUIRE(pool);
  t.sys.spawn(short_lived_caller, *pool);
  t.run();
  return t.count(t.advance(1h), "work_to_do");
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "with skip_orphaned, an operation whose caller terminated "
                  "is not started" *
                      doctest::timeout(30)) {
  CHECK(runs_after_caller_died(*this, true) == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "without skip_orphaned, an operation whose caller terminated "
                  "still runs" *
                      doctest::timeout(30)) {
  CHECK(runs_after_caller_died(*this, false) == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "a full bounded queue rejects at once with the depth" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(sys, triple,
                               pool::pool_options{}.workers(1).capacity(2));
  REQUIRE(pool);
  run();
  self->send(*pool, pool::submit_after_atom_v, caf::timespan{1h}, 1);
  self->send(*pool, pool::submit_after_atom_v, caf::timespan{1h}, 2);
  auto third = self->request(*pool, caf::infinite, pool::submit_atom_v, 3);
  run();
  REQUIRE(replies() == 1);
  third.receive([](int) { FAIL("accepted beyond capacity"); },
                [](caf::error& err) {
                  CHECK(pool::is(err, pool::pool_errc::overloaded));
                  CHECK(pool::describe(err) ==
                        "pool.overloaded: queue depth 2: capacity 2");
                });
  auto st = stats_of(*pool);
  CHECK(st.rejected == 1);
  CHECK(st.submitted == 2);
}

TEST_CASE_FIXTURE(deterministic,
                  "with wait_when_full, a submit is answered once there is "
                  "room, and the waiting submits are capped" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(
      sys, triple,
      pool::pool_options{}.workers(1).capacity(1).wait_when_full(1));
  REQUIRE(pool);
  run();
  auto first = self->request(*pool, caf::infinite, pool::submit_after_atom_v,
                             caf::timespan{1h}, 1);
  auto parked = self->request(*pool, caf::infinite, pool::submit_atom_v, 2);
  auto refused = self->request(*pool, caf::infinite, pool::submit_atom_v, 3);
  run();
  REQUIRE(replies() == 1); // only the refusal
  refused.receive([](int) { FAIL("accepted"); },
                  [](caf::error& err) {
                    CHECK(pool::is(err, pool::pool_errc::overloaded));
                  });
  CHECK(stats_of(*pool).parked == 1);
  advance(1h); // the first runs, making room for the parked one
  REQUIRE(replies() == 2);
  first.receive([](int y) { CHECK(y == 3); },
                [](caf::error& err) { FAIL(pool::describe(err)); });
  parked.receive([](int y) { CHECK(y == 6); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
  auto st = stats_of(*pool);
  CHECK(st.parked == 0);
  CHECK(st.completed == 2);
  CHECK(st.rejected == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "a pending drain or resize is answered with the termination "
                  "error when the pool dies" *
                      doctest::timeout(30)) {
  auto pool = spawn(triple, 2);
  run();
  frozen = "pool.worker"; // the work never gets done
  self->send(pool, pool::submit_atom_v, 1);
  auto drained = self->request(pool, caf::infinite, pool::drain_atom_v);
  run();
  CHECK(replies() == 0);
  caf::anon_send_exit(pool, caf::exit_reason::kill);
  frozen.clear();
  run();
  drained.receive([] { FAIL("drained without doing the work"); },
                  [](caf::error& err) {
                    CHECK(pool::is(err, pool::pool_errc::pool_terminated));
                  });
}
