// Lookahead, step by step on CAF's testing scheduler: a busy worker gets
// its next batch while it runs the current one and starts it without
// asking; until it starts it, the shepherd takes it back on pause, when
// one of its operations ends, and when the worker times out
// (docs/protocol.md "Lookahead"). (That a worker abandoned after a timeout
// never runs the batch sent ahead to it needs real threads: tests/chaos.cpp
// fails without the withdrawal.)
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include "deterministic.hpp"

using namespace std::chrono_literals;
using pool::test::deterministic;
using pool::test::doubled;
using pool::test::results;

namespace {

/// How often the job ran for each input.
using call_log = std::map<int, int>;

/// A job doubling its input, counting its calls in `log`.
auto counted(std::shared_ptr<call_log> log) {
  return [log](int x) {
    ++(*log)[x];
    return 2 * x;
  };
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "a busy worker is sent its next entry, counts it as waiting "
                  "until it starts it, and starts it without asking" *
                      doctest::timeout(30)) {
  auto log = std::make_shared<call_log>();
  auto pool = spawn_with(counted(log), pool::pool_options{}.workers(1));
  run();
  frozen = "pool.worker"; // stuck in its first job
  for (int i = 0; i < 5; ++i)
    self->send(pool, pool::submit_atom_v, i);
  run();
  auto st = stats_of(pool);
  CHECK(st.sent_ahead == 1);
  CHECK(st.busy == 1);
  CHECK(st.held == 1);      // the one running
  CHECK(st.available == 4); // one sent ahead, three in line
  frozen.clear();
  auto events = run();
  CHECK(results(self, 5) == doubled(0, 5));
  st = stats_of(pool);
  CHECK(st.completed == 5);
  CHECK(st.stale_replies == 0);
  // Each batch sent ahead was started without a trip to the queue for it.
  CHECK(st.sent_ahead >= 2);
  CHECK(count(events, "get_work") < 5);
  for (int i = 0; i < 5; ++i)
    CHECK((*log)[i] == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "with a timeout, a batch sent ahead waits behind the rest of "
                  "the batch the worker reports attempt by attempt" *
                      doctest::timeout(30)) {
  auto log = std::make_shared<call_log>();
  auto pool = spawn_with(
      counted(log),
      pool::pool_options{}.workers(1).attempt_timeout(10s).max_batch(16));
  run();
  // A job that took no time, so that the next ones go out in batches.
  self->send(pool, pool::submit_atom_v, 100);
  run();
  CHECK(results(self, 1) == std::vector<int>{200});
  frozen = "pool.worker";
  for (int i = 0; i < 40; ++i)
    self->send(pool, pool::submit_atom_v, i);
  run();
  frozen.clear();
  run();
  // Every reply arrives, in order: the attempts of the batch sent ahead
  // were reported after those before them, to the shepherd.
  CHECK(results(self, 40) == doubled(0, 40));
  auto st = stats_of(pool);
  CHECK(st.sent_ahead >= 1);
  CHECK(st.batches >= 2);
  CHECK(st.stale_replies == 0);
  CHECK(st.timed_out == 0);
  for (int i = 0; i < 40; ++i)
    CHECK((*log)[i] == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "pause takes back a batch sent ahead: the busy worker "
                  "finishes its job and starts nothing until resumed" *
                      doctest::timeout(30)) {
  auto log = std::make_shared<call_log>();
  auto pool = spawn_with(counted(log), pool::pool_options{}.workers(1));
  run();
  frozen = "pool.worker";
  for (int i = 0; i < 4; ++i)
    self->send(pool, pool::submit_atom_v, i);
  run();
  REQUIRE(stats_of(pool).sent_ahead == 1);
  self->send(pool, pool::pause_atom_v);
  run();
  auto st = stats_of(pool);
  CHECK(st.taken_back == 1);
  CHECK(st.available == 3);
  frozen.clear();
  run();
  CHECK(results(self, 4) == doubled(0, 1)); // only the running one
  CHECK(log->size() == 1);
  self->send(pool, pool::resume_atom_v);
  run();
  CHECK(results(self, 4) == doubled(1, 4));
  st = stats_of(pool);
  CHECK(st.completed == 4);
  CHECK(st.stale_replies == 0);
  for (int i = 0; i < 4; ++i)
    CHECK((*log)[i] == 1);
}

TEST_CASE_FIXTURE(deterministic,
                  "cancelling an operation sent ahead takes its batch back: "
                  "the busy worker never runs it" *
                      doctest::timeout(30)) {
  auto log = std::make_shared<call_log>();
  auto pool = spawn_with(counted(log), pool::pool_options{}.workers(1));
  run();
  frozen = "pool.worker";
  auto ids = enqueue_ids(pool, 3);
  REQUIRE(ids.size() == 3);
  REQUIRE(stats_of(pool).sent_ahead == 1);
  self->send(pool, pool::cancel_op_atom_v, ids[1]); // the one sent ahead
  run();
  CHECK(stats_of(pool).taken_back == 1);
  frozen.clear();
  run();
  auto st = stats_of(pool);
  CHECK(st.completed == 2);
  CHECK(st.cancelled == 1);
  CHECK(st.stale_replies == 0);
  CHECK(log->count(1) == 0);
}

TEST_CASE_FIXTURE(deterministic,
                  "a worker that times out gives its batch sent ahead back "
                  "unstarted: it runs once, on the replacement, and only the "
                  "overrun counts as an attempt" *
                      doctest::timeout(30)) {
  auto log = std::make_shared<call_log>();
  auto pool = spawn_with(counted(log), pool::pool_options{}
                                           .workers(1)
                                           .attempt_timeout(1s)
                                           .max_attempts(2)
                                           .backoff(0s, 0s));
  run();
  frozen = "pool.worker"; // the first job overruns
  for (int i = 0; i < 3; ++i)
    self->send(pool, pool::submit_atom_v, i);
  run();
  REQUIRE(stats_of(pool).sent_ahead >= 1);
  advance(1s); // the worker is abandoned; its replacement is frozen too
  frozen.clear();
  run();
  std::vector<int> got = results(self, 3);
  std::sort(got.begin(), got.end());
  CHECK(got == doubled(0, 3));
  auto st = stats_of(pool);
  CHECK(st.timed_out == 1);
  CHECK(st.retried == 1);
  // The abandoned worker ran at most its late job (a stale reply), never
  // the batch sent ahead to it.
  CHECK((*log)[0] <= 2);
  CHECK((*log)[1] == 1);
  CHECK((*log)[2] == 1);
}
