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
                  "through the queue, no wake-up round trip" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 1);
  run();
  auto answer = self->request(pool, caf::infinite, pool::submit_atom_v, 21);
  auto events = run();
  // The entry goes to the queue, and the sleeping worker's work is asked
  // for right behind it: the queue hands out what it holds, and the
  // worker (the pool's own takes work asleep) needs no wake_up and
  // give_work first. After its status reply the worker asks again; the
  // shepherd knows the queue holds nothing due (nothing counted, nothing
  // on its way), so the worker goes back to sleep without a trip to it,
  // and without a go_sleep (it takes work in any state, and is never sent
  // a wake_up: the message would change nothing for it).
  CHECK(tags(events) == strings{"submit", "add_work", "get_work", "work_to_do",
                                "status_rep", "give_work"});
  REQUIRE(replies() == 1);
  answer.receive([](int y) { CHECK(y == 42); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
}

TEST_CASE_FIXTURE(
    deterministic,
    "every submit goes through the queue, and work due later reaches a "
    "sleeping worker through the queue too" *
        doctest::timeout(30)) {
  auto pool = spawn(twice, 2);
  run();
  frozen = "pool.worker";
  self->send(pool, pool::submit_atom_v, 1);
  auto events = run();
  CHECK(count(events, "add_work") == 1);
  self->send(pool, pool::submit_atom_v, 2);
  self->send(pool, pool::submit_atom_v, 3); // both busy: it waits
  events = run();
  CHECK(count(events, "add_work") >= 1);
  frozen.clear();
  events = run();
  CHECK(replies() == 3);
  auto st = stats_of(pool);
  CHECK(st.completed == 3);
  // A due entry in the queue: the queue is asked for it on a sleeping
  // worker's behalf when its timer fires.
  frozen = "pool.worker";
  self->send(pool, pool::submit_after_atom_v, caf::timespan{1s}, 4);
  run();
  events = advance(1s);
  frozen.clear();
  for (auto& ev : run())
    events.push_back(std::move(ev));
  CHECK(count(events, "wake_up") == 0);
  CHECK(count(events, "get_work") >= 1);
  CHECK(replies() == 4);
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
  // knew without asking the queue, whose counts armed its timer for 5 s;
  // the pool's own worker is not told, see above).
  CHECK(count(events, "work_to_do") == 1);
  CHECK(tags(events).back() == "give_work");
  CHECK(count(events, "go_sleep") == 0);
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
                  "the shepherd answers stats itself, without asking workers "
                  "or the queue" *
                      doctest::timeout(30)) {
  auto pool = spawn(twice, 3);
  run();
  self->send(pool, pool::submit_after_atom_v, caf::timespan{1h}, 1);
  run();
  auto query = self->request(pool, caf::infinite, pool::pool_stats_atom_v);
  auto events = run();
  CHECK(tags(events) == strings{"pool_stats"});
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
