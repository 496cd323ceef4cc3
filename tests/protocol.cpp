// The pattern's message sequences, step by step on CAF's testing scheduler:
// no work available, a successful attempt, delayed work, and waking only as
// many workers as there is due work.
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
                  "a successful attempt, 1 worker: the pattern's sequence" *
                      doctest::timeout(30)) {
  // The plain sequence, as joined workers always see it.
  auto pool = spawn_plain(twice, 1);
  run();
  auto answer = self->request(pool, caf::infinite, pool::submit_atom_v, 21);
  auto events = run();
  CHECK(tags(events) == strings{"submit", "add_work", "wake_up", "give_work",
                                "get_work", "work_to_do", "status_rep",
                                "give_work", "get_work", "no_work",
                                "go_sleep"});
  REQUIRE(replies() == 1);
  answer.receive([](int y) { CHECK(y == 42); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "a successful attempt, 1 worker, with the short cuts: "
                  "straight to the sleeping worker, past the queue" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  run();
  auto answer = self->request(pool, caf::infinite, pool::submit_atom_v, 21);
  auto events = run();
  // Nothing else is due: the work goes to the sleeping worker at once,
  // past the queue. After its status reply the worker asks again; the
  // shepherd knows the queue holds nothing due (nothing counted, nothing
  // on its way), so the worker goes back to sleep without a trip to it.
  CHECK(tags(events) == strings{"submit", "work_to_do", "status_rep",
                                "give_work", "go_sleep"});
  REQUIRE(replies() == 1);
  answer.receive([](int y) { CHECK(y == 42); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "a submit finding work already due goes through the "
                  "queue, and for a sleeping worker the shepherd asks the queue "
                  "instead of waking it" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 2);
  run();
  frozen = "pool.worker";
  self->send(pool, pool::submit_atom_v, 1); // straight to a worker
  auto events = run();
  CHECK(count(events, "add_work") == 0);
  self->send(pool, pool::submit_atom_v, 2); // nothing due: straight again
  self->send(pool, pool::submit_atom_v, 3); // both busy: into the queue
  events = run();
  CHECK(count(events, "add_work") == 1);
  frozen.clear();
  events = run();
  CHECK(replies() == 3);
  auto st = stats_of(pool);
  CHECK(st.direct_handouts == 2);
  CHECK(st.completed == 3);
  // A due entry in the queue: the next submit queues behind it, and the
  // worker woken for it gets it without first asking.
  frozen = "pool.worker";
  self->send(pool, pool::submit_after_atom_v, caf::timespan{1s}, 4);
  run();
  events = advance(1s);
  CHECK(count(events, "wake_up") == 0); // the queue is asked for it instead
  CHECK(count(events, "get_work") == 1);
  frozen.clear();
  events = run();
  CHECK(replies() == 4);
  CHECK(stats_of(pool).direct_handouts == 2);
}

TEST_CASE_FIXTURE(deterministic,
                  "while every worker is busy, the shepherd takes the next "
                  "due entry out ahead of time, and hands it out in order" *
                      doctest::timeout(30)) {
  // (Without hand-ahead, which the next tests cover: the entry waits here.)
  auto pool = spawn_with(twice, pool::pool_options{}.workers(1).hand_ahead(
                                    false));
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
  auto pool =
      spawn_with(twice, pool::pool_options{}.workers(1).max_batch(1));
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
  auto pool =
      spawn_with(twice, pool::pool_options{}.workers(1).max_batch(1));
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
      caf::after(0s) >> [] { FAIL("no work_to_do for the worker that asked"); });
  CHECK(second.payload.get_as<int>(0) == 2);
  self->send(pool, pool::status_reply_atom_v, second.id,
             caf::make_message(4));
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
  auto pool = spawn_with(
      twice_logged(ran),
      pool::pool_options{}.workers(2).max_batch(1));
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
  auto pool = spawn_with(
      twice_logged(ran),
      pool::pool_options{}.workers(1).max_batch(1));
  run();
  frozen = "pool.worker";
  std::vector<uint64_t> ids;
  for (int i = 0; i < 2; ++i) {
    auto answer = self->request(pool, caf::infinite, pool::enqueue_atom_v, i);
    run();
    answer.receive([&](uint64_t id) { ids.push_back(id); },
                   [](caf::error& err) { FAIL(pool::describe(err)); });
  }
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
      pool::pool_options{}.workers(1).max_batch(1).attempt_timeout(1s));
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
  auto pool = spawn_with(twice, pool::pool_options{}.workers(1).max_batch(1)
                                    .hand_ahead(false));
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
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    auto answer = self->request(pool, caf::infinite, pool::enqueue_atom_v, i);
    run();
    answer.receive([&](uint64_t id) { ids.push_back(id); },
                   [](caf::error& err) { FAIL(pool::describe(err)); });
  }
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

TEST_CASE_FIXTURE(deterministic,
                  "no work available: give_work is answered by go_sleep" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  // The scoped actor speaks the worker side of the protocol.
  join_as_worker(pool);
  self->send(pool, pool::give_me_work_atom_v);
  auto events = run();
  // go_sleep goes to the scoped actor, outside the scheduler's trace. A
  // joined worker gets the plain sequence: the queue is asked.
  CHECK(tags(events) == strings{"give_work", "get_work", "no_work"});
  REQUIRE(replies() == 1);
  bool slept = false;
  self->receive([&](pool::go_to_sleep_atom) { slept = true; },
                caf::after(0s) >> [] {});
  CHECK(slept);
}

TEST_CASE_FIXTURE(deterministic,
                  "one submit with 3 sleeping workers wakes exactly one" *
                      doctest::timeout(30)) {
  auto pool = spawn_plain(twice, 3);
  run();
  auto answer = self->request(pool, caf::infinite, pool::submit_atom_v, 1);
  auto events = run();
  CHECK(count(events, "wake_up") == 1);
  CHECK(count(events, "work_to_do") == 1);
  REQUIRE(replies() == 1);
  answer.receive([](int y) { CHECK(y == 2); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "3 submits with 3 sleeping workers wake 3, never more" *
                      doctest::timeout(30)) {
  auto pool = spawn_plain(twice, 3);
  run();
  for (int i = 0; i < 3; ++i)
    self->send(pool, pool::submit_atom_v, i);
  auto events = run();
  CHECK(count(events, "wake_up") == 3);
  CHECK(count(events, "work_to_do") == 3);
}

TEST_CASE_FIXTURE(deterministic,
                  "the most recently slept worker is woken first" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 2);
  join_as_worker(pool);
  // The joined worker went to sleep last: the one submit wakes it.
  self->send(pool, pool::submit_atom_v, 5);
  auto events = run();
  // The wake_up went to the scoped actor, not to a scheduled worker.
  CHECK(count(events, "wake_up") == 0);
  REQUIRE(replies() == 1);
  bool woken = false;
  self->receive([&](pool::wake_up_atom) { woken = true; },
                caf::after(0s) >> [] {});
  CHECK(woken);
}

TEST_CASE_FIXTURE(
    deterministic,
    "delayed work is handed out at its deadline, not a tick before" *
        doctest::timeout(30)) {
  auto pool = spawn_plain(twice, 2);
  run();
  auto answer = self->request(pool, caf::infinite, pool::submit_after_atom_v,
                              caf::timespan{10s}, 4);
  auto events = run();
  CHECK(count(events, "wake_up") == 0);
  CHECK(count(events, "work_to_do") == 0);
  events = advance(10s - 1ns);
  CHECK(count(events, "work_to_do") == 0);
  CHECK(replies() == 0);
  events = advance(1ns);
  CHECK(count(events, "due_timer") == 1);
  CHECK(count(events, "wake_up") == 1);
  CHECK(count(events, "work_to_do") == 1);
  REQUIRE(replies() == 1);
  answer.receive([](int y) { CHECK(y == 8); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "workers sleep while only delayed work remains, woken at "
                  "the earliest deadline" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  run();
  self->send(pool, pool::submit_after_atom_v, caf::timespan{20s}, 2);
  self->send(pool, pool::submit_after_atom_v, caf::timespan{5s}, 1);
  self->send(pool, pool::submit_atom_v, 0);
  auto events = run();
  // The due job ran; the worker then slept (nothing due: the shepherd
  // knew without asking the queue, whose counts armed its timer for 5 s).
  CHECK(count(events, "work_to_do") == 1);
  CHECK(tags(events).back() == "go_sleep");
  events = advance(5s);
  CHECK(count(events, "work_to_do") == 1);
  events = advance(15s - 1ns);
  CHECK(count(events, "work_to_do") == 0);
  events = advance(1ns);
  CHECK(count(events, "work_to_do") == 1);
  std::vector<int> results;
  for (int i = 0; i < 3; ++i)
    self->receive([&](int y) { results.push_back(y); },
                  caf::after(0s) >> [] {});
  CHECK(results == std::vector<int>{0, 2, 4});
}

TEST_CASE_FIXTURE(deterministic,
                  "the shepherd answers stats itself, without asking workers" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 3);
  run();
  self->send(pool, pool::submit_after_atom_v, caf::timespan{1h}, 1);
  run();
  auto query = self->request(pool, caf::infinite, pool::pool_stats_atom_v);
  auto events = run();
  CHECK(tags(events) == strings{"pool_stats", "count_work"});
  REQUIRE(replies() == 1);
  query.receive(
      [](const pool::pool_stats& st) {
        CHECK(st.configured == 3);
        CHECK(st.workers == 3);
        CHECK(st.sleeping == 3);
        CHECK(st.busy == 0);
        CHECK(st.waiting == 0);
        CHECK(st.available == 0);
        CHECK(st.delayed == 1);
        CHECK(st.submitted == 1);
      },
      [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "a joined protocol-speaking actor receives work" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  join_as_worker(pool);
  auto answer = self->request(pool, caf::infinite, pool::submit_atom_v, 7);
  run();
  // Woken (the most recent sleeper), the external worker asks for work.
  auto record = take_work(pool);
  REQUIRE(record.payload.match_elements<int>());
  CHECK(record.payload.get_as<int>(0) == 7);
  CHECK(record.id.attempt == 1);
  self->send(pool, pool::status_reply_atom_v, record.id,
             caf::make_message(700));
  run();
  answer.receive([](int y) { CHECK(y == 700); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(deterministic,
                  "stats report queue wait, processing time and high-water "
                  "marks" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  join_as_worker(pool);
  // The scoped actor, woken first, holds the first job for 3 s while the
  // local worker runs two more.
  self->send(pool, pool::submit_atom_v, 1);
  run();
  auto held = take_work(pool);
  self->send(pool, pool::submit_atom_v, 2);
  self->send(pool, pool::submit_atom_v, 3);
  run();
  sched.advance_time(3s);
  self->send(pool, pool::status_reply_atom_v, held.id, caf::make_message(0));
  run();
  auto st = stats_of(pool);
  CHECK(st.busy_high == 2); // the scoped actor and the local worker
  CHECK(st.available_high >= 1);
  CHECK(st.processing.count == 3);
  CHECK(st.processing.max == caf::timespan{3s});
  CHECK(st.processing.p50 == caf::timespan{0});
  CHECK(st.queue_wait.count == 3);
}
