// Failures are the shepherd's job, step by step on CAF's testing scheduler:
// retries at exactly the backoff delays, the attempt history, stale replies
// after a timeout, and the OTP-style restart intensity.
#include <doctest/doctest.h>

#include <stdexcept>

#include <map>

#include "deterministic.hpp"
#include "faulty_store.hpp"
#include <pool/backoff.hpp>
#include <pool/detail/supervision.hpp>

using namespace std::chrono_literals;
using pool::test::deterministic;

namespace {

/// Fails every attempt.
auto always_fails = [](int) -> int { throw std::runtime_error("boom"); };

/// Breaks its worker's resource for negative inputs.
auto breaks_on_negative = [](int x) {
  if (x < 0)
    throw pool::resource_broken("connection reset");
  return x;
};

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "retries happen at exactly the backoff delays, then the "
                  "caller gets the whole history" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(sys, always_fails,
                               pool::pool_options{}
                                   .workers(1)
                                   .max_attempts(4)
                                   .backoff(1s, 10s, 2.0)
                                   .jitter(0.0));
  REQUIRE(pool);
  run();
  auto answer = self->request(*pool, caf::infinite, pool::submit_atom_v, 1);
  CHECK(count(run(), "work_to_do") == 1); // attempt 1 at +0 s
  for (auto delay : {1s, 2s, 4s}) {
    CHECK(count(advance(delay - 1ns), "work_to_do") == 0);
    CHECK(count(advance(1ns), "work_to_do") == 1);
  }
  REQUIRE(replies() == 1);
  answer.receive(
      [](int) { FAIL("succeeded"); },
      [](caf::error& err) {
        CHECK(pool::is(err, pool::pool_errc::operation_failed));
        auto history = pool::attempt_history(err);
        REQUIRE(history.size() == 4);
        std::vector<caf::timespan> when;
        for (size_t i = 0; i < history.size(); ++i) {
          CHECK(history[i].attempt == i + 1);
          CHECK(pool::is(history[i].reason, pool::pool_errc::job_failed));
          when.push_back(history[i].after_submit);
        }
        CHECK(when == std::vector<caf::timespan>{0s, 1s, 3s, 7s});
        CHECK(pool::describe(err).find("boom") != std::string::npos);
      });
  auto st = stats_of(*pool);
  CHECK(st.retried == 3);
  CHECK(st.failed == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "with jitter, retry delays follow the seeded sequence" *
                      doctest::timeout(30)) {
  auto opts = pool::pool_options{}
                  .workers(1)
                  .max_attempts(3)
                  .backoff(1s, 10s, 2.0)
                  .jitter(0.5)
                  .seed(1234);
  pool::backoff expected{1s, 10s, 2.0, 0.5, 1234};
  auto pool = pool::spawn_pool(sys, always_fails, opts);
  REQUIRE(pool);
  run();
  self->send(*pool, pool::submit_atom_v, 1);
  CHECK(count(run(), "work_to_do") == 1);
  for (uint32_t failed = 1; failed <= 2; ++failed) {
    auto delay = expected.next(failed);
    CHECK(delay > caf::timespan{1s * failed}); // jitter added something
    CHECK(count(advance(delay - 1ns), "work_to_do") == 0);
    CHECK(count(advance(1ns), "work_to_do") == 1);
  }
}

TEST_CASE_FIXTURE(deterministic,
                  "a stale reply after a timeout is dropped and the caller "
                  "gets exactly one outcome" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x * 10; },
      pool::pool_options{}
          .workers(1)
          .max_attempts(2)
          .backoff(0s, 0s)
          .attempt_timeout(5s));
  REQUIRE(pool);
  // The scoped actor joins as a worker that will be too slow.
  join_as_worker(*pool);
  auto answer = self->request(*pool, caf::infinite, pool::submit_atom_v, 4);
  run();
  auto held = take_work(*pool);
  CHECK(held.id.attempt == 1);
  // Nothing happens a tick before the timeout.
  CHECK(count(advance(5s - 1ns), "work_to_do") == 0);
  // At the timeout, attempt 2 goes to the local worker and succeeds; the
  // joined worker is told that it left the pool.
  CHECK(count(advance(1ns), "work_to_do") == 1);
  REQUIRE(replies() == 2);
  self->receive([](pool::left_pool_atom, const caf::error& reason) {
    CHECK(pool::is(reason, pool::pool_errc::timed_out));
  });
  answer.receive([](int y) { CHECK(y == 40); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
  // The slow worker's late answer is dropped, not delivered.
  self->send(*pool, pool::status_reply_atom_v, held.id, caf::make_message(999));
  run();
  CHECK(replies() == 0);
  auto st = stats_of(*pool);
  CHECK(st.timed_out == 1);
  CHECK(st.stale_replies == 1);
  CHECK(st.completed == 1);
  CHECK(st.workers == 1); // the timed-out joined worker left the pool
}

TEST_CASE_FIXTURE(deterministic,
                  "a worker whose resource broke is replaced and its attempt "
                  "retried" *
                      doctest::timeout(30)) {
  auto calls = std::make_shared<int>(0);
  auto flaky = [calls](int x) {
    if (++*calls == 1)
      throw pool::resource_broken("connection reset");
    return x;
  };
  auto pool = pool::spawn_pool(
      sys, flaky,
      pool::pool_options{}.workers(2).max_attempts(2).backoff(0s, 0s));
  REQUIRE(pool);
  run();
  auto answer = self->request(*pool, caf::infinite, pool::submit_atom_v, 9);
  run();
  REQUIRE(replies() == 1);
  answer.receive([](int y) { CHECK(y == 9); },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
  auto st = stats_of(*pool);
  CHECK(st.worker_restarts == 1);
  CHECK(st.retried == 1);
  CHECK(st.workers == 2);
  CHECK(st.busy + st.waiting + st.sleeping == 2);
}

TEST_CASE_FIXTURE(deterministic,
                  "restarts below the intensity keep the pool alive as the "
                  "window slides, one more ends it" *
                      doctest::timeout(30)) {
  auto pool = pool::spawn_pool(
      sys, breaks_on_negative,
      pool::pool_options{}.workers(1).restart_intensity(2, 10s));
  REQUIRE(pool);
  self->monitor(*pool);
  // A linked parent sees the exit reason.
  auto parent_saw = std::make_shared<caf::error>();
  auto parent =
      sys.spawn([pool = *pool, parent_saw](caf::event_based_actor* parent) {
        parent->link_to(pool);
        parent->set_exit_handler([parent, parent_saw](caf::exit_msg& msg) {
          *parent_saw = msg.reason;
          parent->quit();
        });
        return caf::behavior{[](int) {}};
      });
  run();
  auto break_one = [&] {
    self->send(*pool, pool::submit_atom_v, -1);
    run();
    self->receive([](caf::error&) {}); // that caller's final failure
  };
  break_one();
  break_one();  // 2 restarts within 10 s: allowed
  advance(11s); // both fall out of the window
  break_one();
  break_one(); // again 2 within the window
  CHECK(stats_of(*pool).worker_restarts == 4);
  // A caller waits on a delayed operation while the limit is exceeded.
  auto pending = self->request(*pool, caf::infinite, pool::submit_after_atom_v,
                               caf::timespan{1h}, 5);
  self->send(*pool, pool::submit_atom_v, -1);
  run();
  caf::error exit_reason;
  bool answered = false;
  for (int i = 0; i < 3; ++i)
    self->receive([&](caf::down_msg& msg) { exit_reason = msg.reason; },
                  [&](caf::error& err) {
                    // the breaking caller's outcome or the pending one's
                    answered = answered ||
                               pool::is(err, pool::pool_errc::pool_terminated);
                  },
                  caf::after(0s) >> [] {});
  CHECK(pool::is(exit_reason, pool::pool_errc::restart_intensity));
  CHECK(pool::is(*parent_saw, pool::pool_errc::restart_intensity));
  pending.receive([](int) { FAIL("delivered"); },
                  [](caf::error& err) {
                    CHECK(pool::is(err, pool::pool_errc::pool_terminated));
                    CHECK(pool::describe(err).find("restart_intensity") !=
                          std::string::npos);
                  });
}

TEST_CASE_FIXTURE(deterministic,
                  "a crashed queue is respawned over the same store: nothing "
                  "lost, nothing twice" *
                      doctest::timeout(30)) {
  // Crash on the 2nd and 5th store call (a push and a pop).
  auto store = std::make_shared<pool::test::faulty_store>(
      [](uint64_t call) { return call == 2 || call == 5; });
  auto runs = std::make_shared<std::map<int, int>>();
  auto job = [runs](int x) {
    ++(*runs)[x];
    return x + 100;
  };
  auto pool =
      pool::spawn_pool(sys, job, pool::pool_options{}.workers(2), store);
  REQUIRE(pool);
  run();
  std::vector<int> results;
  for (int i = 1; i <= 4; ++i)
    self->send(*pool, pool::submit_atom_v, i);
  run();
  for (int i = 1; i <= 4; ++i)
    self->receive([&](int y) { results.push_back(y); },
                  caf::after(0s) >> [] {});
  std::sort(results.begin(), results.end());
  CHECK(results == std::vector<int>{101, 102, 103, 104});
  CHECK(replies() == 0);
  for (int i = 1; i <= 4; ++i)
    CHECK((*runs)[i] == 1);
  CHECK(store->crashes() == 2);
  auto st = stats_of(*pool);
  CHECK(st.queue_restarts == 2);
  CHECK(st.completed == 4);
  CHECK(st.available == 0);
}

// -- the supervision unit on its own ------------------------------------------

TEST_CASE("supervision unit: more than max_restarts within the sliding "
          "window gives up" *
          doctest::timeout(10)) {
  using time_point = pool::supervision::time_point;
  pool::supervision sup{3, 10s, 1, pool::backoff{1s, 1s, 1.0, 0.0, 1}};
  time_point t{100s};
  CHECK(sup.note_restart(t));
  CHECK(sup.note_restart(t + 1s));
  CHECK(sup.note_restart(t + 2s));
  // The first one left the window: still within the intensity.
  CHECK(sup.note_restart(t + 11s));
  CHECK(sup.restarts_in_window(t + 11s) == 3);
  CHECK(!sup.note_restart(t + 11s));
  CHECK(sup.intensity_text() == "more than 3 restarts within 10s");
}

TEST_CASE("supervision unit: a retry is due after the backoff while "
          "attempts are left, a per-operation policy overrides the pool's" *
          doctest::timeout(10)) {
  using time_point = pool::supervision::time_point;
  pool::supervision sup{10, 10s, 3, pool::backoff{1s, 30s, 2.0, 0.0, 1}};
  time_point t{100s};
  pool::operation_policy pool_default;
  CHECK(sup.retry_at(1, pool_default, t) == t + 1s);
  CHECK(sup.retry_at(2, pool_default, t) == t + 2s);
  CHECK(!sup.retry_at(3, pool_default, t));
  pool::operation_policy once;
  once.max_attempts = 1;
  CHECK(!sup.retry_at(1, once, t));
  pool::operation_policy five;
  five.max_attempts = 5;
  CHECK(sup.retry_at(4, five, t) == t + 8s);
}
