// A durable pool on the testing scheduler: acknowledgement after the
// commit, grouped commits, restart over the same file (at-least-once,
// delayed due times, attempts and history kept), outcomes by id, unique
// operations. (Refusals, failing commits, a queue that dies in the middle
// of a group, retention: tests/durable_faults.cpp.)
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include "deterministic.hpp"
#include "pool/sqlite_store.hpp"
#include "durable_fixture.hpp"
#include "sqlite_files.hpp"

using namespace std::chrono_literals;
using namespace pool::test::durable;


TEST_CASE_FIXTURE(durable_fixture,
                  "an enqueue to a durable pool is acknowledged only after "
                  "its commit" *
                      doctest::timeout(30)) {
  auto pool = start(options());
  frozen = "pool.worker";
  self->send(pool, pool::enqueue_atom_v, 1);
  auto events = run();
  // add_work, then the flush that commits it, then the reply with the id.
  auto tags = deterministic::tags(events);
  auto add = std::find(tags.begin(), tags.end(), "add_work");
  auto flush = std::find(tags.begin(), tags.end(), "q_flush");
  REQUIRE(add != tags.end());
  REQUIRE(flush != tags.end());
  CHECK(add < flush);
  REQUIRE(replies() == 1);
  pool::test::connection other{file};
  CHECK(other.query("SELECT count(*) FROM operations") == 1);
  frozen.clear();
}

TEST_CASE_FIXTURE(durable_fixture, "many submits are grouped into one commit" *
                                       doctest::timeout(30)) {
  auto pool = start(options());
  frozen = "pool.worker";
  for (int i = 0; i < 100; ++i)
    self->send(pool, pool::enqueue_atom_v, i);
  auto events = run();
  CHECK(count(events, "add_work") == 100);
  CHECK(count(events, "q_flush") == 1);
  CHECK(replies() == 100);
  frozen.clear();
  run();
  CHECK(stats_of(pool).completed == 100);
}

TEST_CASE_FIXTURE(durable_fixture,
                  "commits are spaced by the commit interval, a lone submit "
                  "after a quiet spell is committed at once" *
                      doctest::timeout(30)) {
  auto pool = start(options().commit_interval(5ms));
  frozen = "pool.worker";
  self->send(pool, pool::enqueue_atom_v, 1);
  run();
  CHECK(replies() == 1); // the first commit: nothing to wait for
  self->send(pool, pool::enqueue_atom_v, 2);
  self->send(pool, pool::enqueue_atom_v, 3);
  run();
  CHECK(replies() == 1); // within 5 ms of the last commit: grouped, held
  advance(5ms);
  CHECK(replies() == 3); // one commit for both
  advance(1h);
  self->send(pool, pool::enqueue_atom_v, 4);
  run();
  CHECK(replies() == 4); // after a quiet spell: at once
  frozen.clear();
}

TEST_CASE_FIXTURE(durable_fixture,
                  "after a crash, a pool over the same file runs what was "
                  "unfinished, not what finished" *
                      doctest::timeout(30)) {
  auto pool = start(options());
  auto done = enqueue(pool, 1);
  CHECK((*log.runs)[1] == 1);
  frozen = "pool.worker"; // the next ones never finish in this process
  auto queued = enqueue(pool, 2);
  auto last = enqueue(pool, 3);
  crash(pool);
  CHECK((*log.runs)[2] == 0);
  drop_outcomes();
  pool = start(options());
  auto st = stats_of(pool);
  CHECK(st.completed == 2); // both adopted operations ran
  CHECK((*log.runs)[1] == 1);
  CHECK((*log.runs)[2] == 1);
  CHECK((*log.runs)[3] == 1);
  auto rec = status(pool, done);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::done);
  CHECK(rec->result.get_as<int>(0) == 10);
  rec = status(pool, queued);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::done);
  CHECK(rec->result.get_as<int>(0) == 20);
  // New operations are numbered after the old ones.
  CHECK(enqueue(pool, 4) > last);
  CHECK(!status(pool, 4242));
}

TEST_CASE_FIXTURE(durable_fixture,
                  "delayed work keeps its due time across a restart" *
                      doctest::timeout(30)) {
  auto pool = start(options());
  self->send(pool, pool::submit_after_atom_v, caf::timespan{1h}, 5);
  run();
  crash(pool);
  pool = start(options());
  auto st = stats_of(pool);
  CHECK(st.delayed == 1);
  advance(58min);
  CHECK((*log.runs)[5] == 0);
  advance(3min);
  CHECK((*log.runs)[5] == 1);
}

TEST_CASE_FIXTURE(durable_fixture,
                  "attempt counts and history survive a restart" *
                      doctest::timeout(30)) {
  auto opts = options().max_attempts(3).backoff(1h, 1h).jitter(0);
  auto pool = start(opts);
  auto id = enqueue(pool, -1); // fails every time
  CHECK((*log.runs)[-1] == 1);
  crash(pool);
  pool = start(opts);
  auto rec = status(pool, id);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::queued);
  CHECK(rec->attempt == 2);
  REQUIRE(rec->history.size() == 1);
  CHECK(rec->history[0].attempt == 1);
  advance(1h);
  advance(1h);
  CHECK((*log.runs)[-1] == 3); // attempts 2 and 3, not a fresh count
  rec = status(pool, id);
  REQUIRE(rec);
  CHECK(rec->state == pool::operation_state::failed);
  CHECK(rec->history.size() == 3);
  CHECK(pool::is(rec->error, pool::pool_errc::operation_failed));
}

TEST_CASE_FIXTURE(durable_fixture,
                  "a unique submit returns the id of the unfinished operation "
                  "with its key, across a restart" *
                      doctest::timeout(30)) {
  auto opts = options().unique_window(1h);
  auto pool = start(opts);
  frozen = "pool.worker";
  auto first = enqueue_unique(pool, "report-7", 7);
  REQUIRE(first);
  auto again = enqueue_unique(pool, "report-7", 7);
  REQUIRE(again);
  CHECK(*again == *first);
  auto other = enqueue_unique(pool, "report-8", 8);
  REQUIRE(other);
  CHECK(*other != *first);
  crash(pool);
  pool = start(opts);
  // Adopted and finished now; within the window it still matches.
  CHECK((*log.runs)[7] == 1);
  auto after = enqueue_unique(pool, "report-7", 7);
  REQUIRE(after);
  CHECK(*after == *first);
  CHECK((*log.runs)[7] == 1);
  advance(2h);
  auto later = enqueue_unique(pool, "report-7", 7);
  REQUIRE(later);
  CHECK(*later != *first); // outside the window: a new operation
  CHECK((*log.runs)[7] == 2);
  auto empty = enqueue_unique(pool, "", 7);
  CHECK(!empty);
}
