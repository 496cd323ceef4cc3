// Taking work out ahead of time, step by step on CAF's testing scheduler:
// the prefetch buffer, and hand-ahead to busy workers under a claim ticket
// (docs/protocol.md "Speed mechanisms").
#include <doctest/doctest.h>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;
using strings = std::vector<std::string>;

namespace {

auto twice = [](int x) { return x * 2; };

/// `twice`, recording every input it runs in `ran`.
auto twice_logged(std::shared_ptr<std::vector<int>> ran) {
  return [ran](int x) {
    ran->push_back(x);
    return x * 2;
  };
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "while every worker is busy, the shepherd takes the next "
                  "due entry out ahead of time, and hands it out in order" *
                      doctest::timeout(30)) {
  // (Without hand-ahead, which the next tests cover: the entry waits here.)
  auto pool =
      spawn_with(twice, pool::pool_options{}.workers(1).hand_ahead(false).lookahead(false));
  run();
  frozen = "pool.worker"; // the worker is stuck in its first job
  for (int i = 0; i < 3; ++i)
    self->send(pool, pool::submit_atom_v, i);
  auto events = run();
  CHECK(count(events, "add_work") == 2); // the first went straight out
  // One prefetch (one busy worker), answered with the oldest queued entry.
  CHECK(count(events, "get_work") == 1);
  auto st = stats_of(pool);
  CHECK(st.available == 2); // one in the queue, one taken out ahead
  CHECK(st.busy == 1);
  frozen.clear();
  run();
  std::vector<int> results;
  for (int i = 0; i < 3; ++i)
    self->receive([&](int y) { results.push_back(y); },
                  caf::after(0s) >> [] {});
  CHECK(results == std::vector<int>{0, 2, 4});
  st = stats_of(pool);
  CHECK(st.completed == 3);
  CHECK(st.available == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "hand-ahead: a busy worker is handed the next due entry, "
                  "takes it as its job ends and runs it without asking" *
                      doctest::timeout(30)) {
  auto pool = spawn_with(twice, pool::pool_options{}.workers(1).max_batch(1).lookahead(false));
  run();
  frozen = "pool.worker"; // the worker is stuck in its first job
  for (int i = 0; i < 3; ++i)
    self->send(pool, pool::submit_atom_v, i);
  run();
  // The first went straight out; the second, taken out ahead, was handed
  // to the busy worker at once; the third waits, taken out ahead.
  auto st = stats_of(pool);
  CHECK(st.handed_ahead == 1);
  CHECK(st.taken_ahead == 0);
  CHECK(st.available == 2); // handed ahead but not started: still waiting
  CHECK(st.busy == 1);
  frozen.clear();
  run();
  std::vector<int> results;
  for (int i = 0; i < 3; ++i)
    self->receive([&](int y) { results.push_back(y); },
                  caf::after(0s) >> [] {});
  CHECK(results == std::vector<int>{0, 2, 4});
  st = stats_of(pool);
  CHECK(st.completed == 3);
  CHECK(st.taken_ahead >= 1); // the worker took it from its mailbox
  CHECK(st.taken_ahead <= st.handed_ahead);
  CHECK(st.stale_replies == 0);
  CHECK(st.available == 0);
  CHECK(st.queue_wait.count == 3);
  CHECK(st.processing.count == 3);
}

TEST_CASE_FIXTURE(deterministic,
                  "hand-ahead: an entry handed to a busy worker goes to "
                  "another worker that asks first, and runs once" *
                      doctest::timeout(30)) {
  auto pool = spawn_with(twice, pool::pool_options{}.workers(1).max_batch(1).lookahead(false));
  run();
  // The scoped actor joins as a second worker; it slept last, so the first
  // submit wakes it and it holds entry 0.
  join_as_worker(pool);
  frozen = "pool.worker";
  self->send(pool, pool::submit_atom_v, 0);
  run();
  auto first = take_work(pool);
  CHECK(first.payload.get_as<int>(0) == 0);
  // The local worker gets entry 1 and is stuck in it; entry 2 is handed
  // ahead to it.
  self->send(pool, pool::submit_atom_v, 1);
  self->send(pool, pool::submit_atom_v, 2);
  run();
  REQUIRE(stats_of(pool).handed_ahead == 1);
  // The scoped actor finishes first and asks: it gets entry 2, withdrawn
  // from the stuck worker.
  self->send(pool, pool::status_reply_atom_v, first.id, caf::make_message(0));
  self->send(pool, pool::give_me_work_atom_v);
  run();
  pool::work_record second;
  self->receive(
      [&](pool::work_to_do_atom, pool::work_record& x) { second = x; },
      caf::after(0s) >>
          [] { FAIL("no work_to_do for the worker that asked"); });
  CHECK(second.payload.get_as<int>(0) == 2);
  self->send(pool, pool::status_reply_atom_v, second.id, caf::make_message(4));
  // The stuck worker finds its offer withdrawn: it does not run entry 2.
  frozen.clear();
  run();
  auto st = stats_of(pool);
  CHECK(st.completed == 3);
  CHECK(st.handed_ahead == 1);
  CHECK(st.taken_ahead == 0);
  CHECK(st.stale_replies == 0);
  CHECK(st.available == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "hand-ahead: one entry is handed to every busy worker "
                  "under one ticket, and only the first to finish runs it" *
                      doctest::timeout(30)) {
  auto ran = std::make_shared<std::vector<int>>();
  auto pool = spawn_with(twice_logged(ran),
                         pool::pool_options{}.workers(2).max_batch(1).lookahead(false));
  run();
  frozen = "pool.worker"; // both workers stuck in their first job
  for (int i = 0; i < 3; ++i)
    self->send(pool, pool::submit_atom_v, i);
  run();
  auto st = stats_of(pool);
  REQUIRE(st.handed_ahead == 1); // entry 2, sent to both
  CHECK(st.busy == 2);
  CHECK(st.available == 1);
  // Both jobs end before the shepherd hears of either: both workers find
  // entry 2 in their mailbox; one takes it, the other finds it taken.
  frozen = "pool.shepherd";
  run();
  frozen.clear();
  run();
  std::sort(ran->begin(), ran->end());
  CHECK(*ran == std::vector<int>{0, 1, 2});
  std::vector<int> results;
  for (int i = 0; i < 3; ++i)
    self->receive([&](int y) { results.push_back(y); },
                  caf::after(0s) >> [] {});
  std::sort(results.begin(), results.end());
  CHECK(results == std::vector<int>{0, 2, 4});
  st = stats_of(pool);
  CHECK(st.completed == 3);
  CHECK(st.taken_ahead == 1);
  CHECK(st.stale_replies == 0);
  CHECK(st.available == 0);
  CHECK(st.busy == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "hand-ahead: cancelling an operation handed ahead "
                  "withdraws it, and the busy worker never runs it" *
                      doctest::timeout(30)) {
  auto ran = std::make_shared<std::vector<int>>();
  auto pool = spawn_with(twice_logged(ran),
                         pool::pool_options{}.workers(1).max_batch(1).lookahead(false));
  run();
  frozen = "pool.worker";
  auto ids = enqueue_ids(pool, 2);
  REQUIRE(stats_of(pool).handed_ahead == 1);
  CHECK(ask(pool, caf::make_message(pool::cancel_op_atom_v, ids[1])) ==
        caf::none);
  CHECK(stats_of(pool).available == 0);
  frozen.clear();
  run();
  CHECK(*ran == std::vector<int>{0});
  auto st = stats_of(pool);
  CHECK(st.completed == 1);
  CHECK(st.cancelled == 1);
  CHECK(st.taken_ahead == 0);
  CHECK(st.stale_replies == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "hand-ahead: a worker lost on a timeout gives back the "
                  "entry handed ahead, unstarted, and its replacement runs it" *
                      doctest::timeout(30)) {
  auto ran = std::make_shared<std::vector<int>>();
  auto pool = spawn_with(
      twice_logged(ran),
      pool::pool_options{}.workers(1).max_batch(1).lookahead(false).attempt_timeout(1s));
  run();
  frozen = "pool.worker"; // stuck in entry 0, entry 1 handed ahead
  self->send(pool, pool::submit_atom_v, 0);
  self->send(pool, pool::submit_atom_v, 1);
  run();
  REQUIRE(stats_of(pool).handed_ahead == 1);
  advance(1s); // entry 0 times out: the worker is killed and replaced
  frozen.clear();
  run();
  bool timed_out = false;
  std::vector<int> results;
  for (int i = 0; i < 2; ++i)
    self->receive([&](int y) { results.push_back(y); },
                  [&](caf::error&) { timed_out = true; },
                  caf::after(0s) >> [] {});
  CHECK(timed_out);
  CHECK(results == std::vector<int>{2});
  CHECK(*ran == std::vector<int>{1}); // the killed worker ran neither
  auto st = stats_of(pool);
  CHECK(st.timed_out == 1);
  CHECK(st.worker_restarts == 1);
  CHECK(st.completed == 1);
  CHECK(st.retried == 0); // an entry never started is no attempt
  CHECK(st.taken_ahead == 0);
  CHECK(st.available == 0);
  CHECK(st.busy == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "hand-ahead off: the busy worker is handed nothing ahead" *
                      doctest::timeout(30)) {
  auto pool = spawn_with(
      twice, pool::pool_options{}.workers(1).max_batch(1).lookahead(false).hand_ahead(false));
  run();
  frozen = "pool.worker";
  for (int i = 0; i < 3; ++i)
    self->send(pool, pool::submit_atom_v, i);
  run();
  auto st = stats_of(pool);
  CHECK(st.handed_ahead == 0);
  CHECK(st.available == 2);
  frozen.clear();
  run();
  st = stats_of(pool);
  CHECK(st.completed == 3);
  CHECK(st.handed_ahead == 0);
  CHECK(st.taken_ahead == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "cancelling an operation taken out ahead of time drops it "
                  "from the buffer" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  run();
  frozen = "pool.worker";
  auto ids = enqueue_ids(pool, 3);
  REQUIRE(ids.size() == 3);
  CHECK(stats_of(pool).available == 2);
  self->send(pool, pool::cancel_op_atom_v, ids[1]); // the one taken ahead
  run();
  CHECK(stats_of(pool).available == 1);
  frozen.clear();
  run();
  auto st = stats_of(pool);
  CHECK(st.completed == 2);
  CHECK(st.cancelled == 1);
  CHECK(st.stale_replies == 0);
}
