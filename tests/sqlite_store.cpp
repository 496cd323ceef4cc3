// The SQLite store: the memory store's ordering contract, plus what
// survives a reopen, group commit, keys, options and retention. (Files it
// must not or cannot use, and failing writes: tests/sqlite_refusals.cpp.)
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <caf/actor_system.hpp>

#include "pool/errors.hpp"
#include "pool/sqlite_store.hpp"

#include "sqlite_files.hpp"
#include "sqlite_store_fixture.hpp"
#include "store_config.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::operation_state;
using pool::sqlite_options;
using pool::sqlite_store;
using pool::work_record;
using pool::test::connection;

using namespace pool::test::sqlite;


// -- the ordering contract, as for memory_store -------------------------------

TEST_CASE("due entries come out first in, first out" * doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  CHECK(store->durable());
  for (uint64_t i = 1; i <= 3; ++i)
    REQUIRE(!store->push(entry(i), t0, t0));
  CHECK(store->available(t0) == 3);
  for (uint64_t i = 1; i <= 3; ++i) {
    auto x = store->pop_due(t0);
    REQUIRE(x);
    CHECK(x->id.operation == i);
    CHECK(has_test_payload(x->payload));
  }
  CHECK(!store->pop_due(t0));
  CHECK(!store->next_due(t0));
  CHECK(!store->commit());
}

TEST_CASE("a delayed entry is not handed out one tick before it is due" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  REQUIRE(!store->push(entry(1), t0 + 10s, t0));
  CHECK(store->available(t0) == 0);
  CHECK(store->delayed(t0) == 1);
  CHECK(store->next_due(t0) == t0 + 10s);
  CHECK(!store->pop_due(t0 + 10s - 1ns));
  auto x = store->pop_due(t0 + 10s);
  REQUIRE(x);
  CHECK(x->id.operation == 1);
  CHECK(store->delayed(t0 + 10s) == 0);
}

TEST_CASE("delayed entries are ordered by due time, then by insertion" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  REQUIRE(!store->push(entry(1), t0 + 30s, t0));
  REQUIRE(!store->push(entry(2), t0 + 10s, t0));
  REQUIRE(!store->push(entry(3), t0 + 20s, t0));
  REQUIRE(!store->push(entry(4), t0 + 10s, t0));
  std::vector<uint64_t> order;
  while (auto x = store->pop_due(t0 + 60s))
    order.push_back(x->id.operation);
  CHECK(order == std::vector<uint64_t>{2, 4, 3, 1});
}

TEST_CASE("an entry that fell due earlier stays ahead of a later submit" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  REQUIRE(!store->push(entry(1), t0 + 5s, t0));
  REQUIRE(!store->push(entry(2), t0 + 7s, t0 + 7s));
  CHECK(store->pop_due(t0 + 8s)->id.operation == 1);
  CHECK(store->pop_due(t0 + 8s)->id.operation == 2);
}

TEST_CASE("remove takes an operation out of the queue and marks it cancelled" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  REQUIRE(!store->push(entry(1), t0, t0));
  REQUIRE(!store->push(entry(2), t0 + 5s, t0));
  CHECK(store->remove(2) == 1);
  CHECK(store->remove(2) == 0);
  CHECK(store->delayed(t0) == 0);
  CHECK(store->available(t0) == 1);
  REQUIRE(!store->commit());
  auto x = store->lookup(2);
  REQUIRE(x);
  CHECK(x->state == operation_state::cancelled);
  CHECK(to_string(x->state) == "cancelled");
}

// -- what survives a reopen ---------------------------------------------------

TEST_CASE("reopening keeps queued and delayed entries, due times, attempts "
          "and history" *
          doctest::timeout(30)) {
  fixture fx;
  auto failure =
      caf::make_error(pool::pool_errc::timed_out, std::string{"5 ms"});
  {
    auto store = fx.open();
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->push(entry(2), t0 + 10s, t0));
    // Operation 3 failed once and waits for its retry, 20 s out.
    REQUIRE(!store->push(entry(3), t0, t0));
    REQUIRE(store->pop_due(t0)->id.operation == 1);
    REQUIRE(store->pop_due(t0)->id.operation == 3);
    REQUIRE(!store->note_failure(3, pool::attempt_failure{1, 5ms, failure}));
    REQUIRE(!store->push(entry(3, 2), t0 + 20s, t0));
    REQUIRE(!store->finish(1, caf::make_message(std::string{"one"}), t0));
    REQUIRE(!store->commit());
  }
  auto store = fx.open();
  // Due times come back through the wall clock: equal up to the drift
  // between the two clock readings at the two opens.
  auto near = [](sqlite_store::time_point x, sqlite_store::time_point y) {
    return x - y < 100ms && y - x < 100ms;
  };
  CHECK(store->available(t0) == 0);
  CHECK(store->delayed(t0) == 2);
  auto due2 = store->next_due(t0);
  REQUIRE(due2);
  CHECK(near(*due2, t0 + 10s));
  CHECK(!store->pop_due(*due2 - 1ns));
  auto x = store->pop_due(*due2);
  REQUIRE(x);
  CHECK(x->id == attempt_id{2, 1});
  CHECK(has_test_payload(x->payload));
  auto due3 = store->next_due(*due2);
  REQUIRE(due3);
  CHECK(near(*due3, t0 + 20s));
  x = store->pop_due(*due3);
  REQUIRE(x);
  CHECK(x->id == attempt_id{3, 2});
  auto adopted = store->unfinished();
  REQUIRE(adopted.size() == 2);
  std::sort(adopted.begin(), adopted.end(),
            [](auto& a, auto& b) { return a.id < b.id; });
  CHECK(adopted[0].id == 2);
  CHECK(adopted[0].state == operation_state::queued);
  CHECK(adopted[0].attempt == 1);
  CHECK(has_test_payload(adopted[0].payload));
  CHECK(adopted[0].history.empty());
  CHECK(adopted[1].id == 3);
  CHECK(adopted[1].attempt == 2);
  REQUIRE(adopted[1].history.size() == 1);
  CHECK(adopted[1].history[0].attempt == 1);
  CHECK(adopted[1].history[0].after_submit == 5ms);
  CHECK(adopted[1].history[0].reason == failure);
  CHECK(store->last_operation_id() == 3);
}

TEST_CASE("an operation running when the store closed is due again at "
          "reopen" *
          doctest::timeout(30)) {
  fixture fx;
  {
    auto store = fx.open();
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->push(entry(2), t0, t0));
    REQUIRE(store->pop_due(t0)->id.operation == 1);
    REQUIRE(!store->commit());
    CHECK(store->lookup(1)->state == operation_state::running);
  }
  auto store = fx.open();
  auto adopted = store->unfinished();
  REQUIRE(adopted.size() == 2);
  std::sort(adopted.begin(), adopted.end(),
            [](auto& a, auto& b) { return a.id < b.id; });
  CHECK(adopted[0].state == operation_state::running);
  CHECK(adopted[1].state == operation_state::queued);
  CHECK(store->lookup(1)->state == operation_state::queued);
  // Due where they were (t0, kept across the reopen as wall time), not at the
  // reopen's clock: a machine up for less than t0 would see them as future.
  auto now = t0 + std::chrono::seconds(1);
  CHECK(store->available(now) == 2);
  CHECK(store->pop_due(now)->id == attempt_id{1, 1});
  CHECK(store->pop_due(now)->id == attempt_id{2, 1});
}

TEST_CASE("finished operations are not handed out again and keep their "
          "outcome" *
          doctest::timeout(30)) {
  fixture fx;
  auto failure = caf::make_error(pool::pool_errc::job_failed, uint32_t{1},
                                 std::string{"boom"});
  {
    auto store = fx.open();
    for (uint64_t i = 1; i <= 3; ++i)
      REQUIRE(!store->push(entry(i), t0, t0));
    REQUIRE(store->pop_due(t0));
    REQUIRE(store->pop_due(t0));
    REQUIRE(!store->finish(1, caf::make_message(std::string{"one"}), t0));
    REQUIRE(!store->finish(2, failure, t0));
    // A late finish does not overwrite the first outcome.
    REQUIRE(!store->finish(1, caf::make_message(std::string{"late"}), t0));
    // Finishing a queued operation takes it out of the queue.
    REQUIRE(!store->finish(3, caf::make_message(std::string{"three"}), t0));
    CHECK(store->available(t0) == 0);
    REQUIRE(!store->commit());
  }
  auto store = fx.open();
  CHECK(store->unfinished().empty());
  CHECK(store->available(t0 + 1h) == 0);
  CHECK(!store->pop_due(t0 + 1h));
  auto one = store->lookup(1);
  REQUIRE(one);
  CHECK(one->state == operation_state::done);
  CHECK(one->result.match_elements<std::string>());
  CHECK(one->result.get_as<std::string>(0) == "one");
  CHECK(has_test_payload(one->payload));
  auto two = store->lookup(2);
  REQUIRE(two);
  CHECK(two->state == operation_state::failed);
  CHECK(two->error == failure);
  CHECK(store->lookup(3)->state == operation_state::done);
  CHECK(!store->lookup(4));
  CHECK(store->last_operation_id() == 3);
}

TEST_CASE("closing without a commit discards the group" *
          doctest::timeout(30)) {
  fixture fx;
  {
    auto store = fx.open();
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->commit());
    REQUIRE(!store->push(entry(2), t0, t0));
  }
  auto store = fx.open();
  CHECK(store->unfinished().size() == 1);
  CHECK(store->last_operation_id() == 1);
}

TEST_CASE("many pushes and one commit are one transaction" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open();
  connection other{fx.file()};
  for (uint64_t i = 1; i <= 100; ++i)
    REQUIRE(!store->push(entry(i), t0, t0));
  // Another connection sees none of them before the commit...
  CHECK(other.query("SELECT count(*) FROM operations") == 0);
  REQUIRE(!store->commit());
  // ... and all of them after it.
  CHECK(other.query("SELECT count(*) FROM operations") == 100);
  // A commit without changes is fine.
  CHECK(!store->commit());
}

TEST_CASE("find_key finds unfinished operations and those finished within "
          "the window" *
          doctest::timeout(30)) {
  fixture fx;
  auto check_keys = [](pool::work_store& store) {
    CHECK(store.find_key("a", t0 + 1h, 1s) == 1u);
    CHECK(store.find_key("b", t0 + 20s, 15s) == 2u);
    CHECK(!store.find_key("b", t0 + 30s, 15s));
    CHECK(!store.find_key("c", t0, 1h));
    CHECK(!store.find_key("nope", t0, 1h));
  };
  {
    auto store = fx.open();
    REQUIRE(!store->set_key(1, "a"));
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->set_key(2, "b"));
    REQUIRE(!store->push(entry(2), t0, t0));
    REQUIRE(!store->set_key(3, "c"));
    REQUIRE(!store->push(entry(3), t0, t0));
    REQUIRE(store->pop_due(t0)->id.operation == 1);
    REQUIRE(store->pop_due(t0)->id.operation == 2);
    REQUIRE(!store->finish(2, caf::make_message(), t0 + 10s));
    // Cancelled operations do not count.
    CHECK(store->remove(3) == 1);
    check_keys(*store);
    CHECK(store->lookup(1)->key == "a");
    REQUIRE(!store->commit());
  }
  // Finish times are wall-clock times: the window holds after a reopen.
  auto store = fx.open();
  check_keys(*store);
}

TEST_CASE("bad options are refused" * doctest::timeout(30)) {
  fixture fx;
  check_fails(fx.try_open(sqlite_options{}.busy_timeout(-1s)),
              pool::pool_errc::invalid_option, "busy_timeout");
  CHECK(to_string(pool::sqlite_sync::normal) == "normal");
}

// -- retention ----------------------------------------------------------------

TEST_CASE("retention prunes finished operations older than the age, with "
          "their histories, oldest first and in batches" *
          doctest::timeout(30)) {
  fixture fx;
  auto store = fx.open(sqlite_options{}.retention(1h));
  connection raw{fx.file()};
  // The index for pruning comes with the first store that has retention.
  CHECK(raw.query("SELECT count(*) FROM sqlite_master WHERE name = "
                  "'operations_finished'") == 1);
  // Cancels are timed by the store itself: the actor system's clock.
  auto now = fx.sys.clock().now();
  for (uint64_t i = 1; i <= 4; ++i)
    REQUIRE(!store->push(entry(i), now, now));
  REQUIRE(store->pop_due(now)->id.operation == 1);
  REQUIRE(store->pop_due(now)->id.operation == 2);
  REQUIRE(!store->finish(1, caf::make_message(1), now));
  auto failure = caf::make_error(pool::pool_errc::timed_out, std::string{"x"});
  REQUIRE(!store->note_failure(1, pool::attempt_failure{1, 1ms, failure}));
  REQUIRE(!store->note_failure(2, pool::attempt_failure{1, 1ms, failure}));
  REQUIRE(!store->finish(2, failure, now + 30min));
  REQUIRE(store->remove(3) == 1);
  REQUIRE(!store->commit());
  // Nothing is older than an hour yet.
  CHECK(store->prune(now + 59min, 100) == size_t{0});
  // Operations 1 (done) and 3 (cancelled) are; 2 failed later; 4 is queued.
  CHECK(store->prune(now + 61min, 100) == size_t{2});
  REQUIRE(!store->commit());
  CHECK(!store->lookup(1));
  CHECK(!store->lookup(3));
  REQUIRE(store->lookup(2));
  CHECK(store->lookup(2)->history.size() == 1);
  CHECK(raw.query("SELECT count(*) FROM failures WHERE operation = 1") == 0);
  CHECK(store->prune(now + 2h, 100) == size_t{1});
  REQUIRE(!store->commit());
  CHECK(raw.query("SELECT count(*) FROM failures") == 0);
  CHECK(store->lookup(4)->state == operation_state::queued);
  CHECK(store->available(now) == 1);
  // In batches: at most `limit` rows a call, the oldest first.
  for (uint64_t i = 5; i <= 11; ++i) {
    REQUIRE(!store->push(entry(i), now, now));
    REQUIRE(!store->finish(i, caf::make_message(int(i)), now + 1s * i));
  }
  REQUIRE(!store->commit());
  CHECK(store->prune(now + 3h, 3) == size_t{3});
  CHECK(!store->lookup(7));
  CHECK(store->lookup(8));
  CHECK(store->prune(now + 3h, 3) == size_t{3});
  CHECK(store->prune(now + 3h, 3) == size_t{1});
  CHECK(store->prune(now + 3h, 3) == size_t{0});
  REQUIRE(!store->commit());
  CHECK(raw.query("SELECT count(*) FROM operations") == 1);
}

TEST_CASE("pruning the newest operations does not let ids be used again" *
          doctest::timeout(30)) {
  fixture fx;
  {
    auto store = fx.open(sqlite_options{}.retention(1s));
    for (uint64_t i = 1; i <= 3; ++i) {
      REQUIRE(!store->push(entry(i), t0, t0));
      REQUIRE(!store->finish(i, caf::make_message(int(i)), t0));
    }
    REQUIRE(!store->commit());
    CHECK(store->prune(t0 + 1h, 100) == size_t{3});
    REQUIRE(!store->commit());
  }
  auto store = fx.open();
  CHECK(store->last_operation_id() == 3);
  CHECK(!store->lookup(3));
}

TEST_CASE("without retention nothing is pruned, and the prune interval "
          "follows the retention" *
          doctest::timeout(30)) {
  fixture fx;
  {
    auto store = fx.open();
    CHECK(!store->prune_interval());
    REQUIRE(!store->push(entry(1), t0, t0));
    REQUIRE(!store->finish(1, caf::make_message(1), t0));
    REQUIRE(!store->commit());
    CHECK(store->prune(t0 + 1000h, 100) == size_t{0});
    CHECK(store->lookup(1));
    connection raw{fx.file()};
    CHECK(raw.query("SELECT count(*) FROM sqlite_master WHERE name = "
                    "'operations_finished'") == 0);
  }
  auto interval = [&](caf::timespan retention) {
    auto store = fx.open(sqlite_options{}.retention(retention));
    return store->prune_interval();
  };
  CHECK(interval(1h) == caf::timespan{6min});
  CHECK(interval(2s) == caf::timespan{1s});
  CHECK(interval(1000h) == caf::timespan{10min});
  check_fails(fx.try_open(sqlite_options{}.retention(0s)),
              pool::pool_errc::invalid_option, "retention");
}
