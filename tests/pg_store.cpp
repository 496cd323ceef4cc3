// The PostgreSQL store, against a private PostgreSQL 15 server per test:
// claims by several stores, leases and fencing, what every durable store
// promises, unique keys across stores, notifications and reconnects. (The
// global concurrency limit, retention, migrations and bad input:
// tests/pg_store_admin.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include <caf/actor_system.hpp>

#include "pool/errors.hpp"
#include "pool/pg_store.hpp"

#include "check_fails.hpp"
#include "pg_conn.hpp"
#include "pg_store_fixture.hpp"
#include "pg_listener.hpp"
#include "pg_schema.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::operation_state;
using pool::pg_options;
using pool::pg_store;
using pool::work_record;


namespace {

using fixture = pool::test::pg_store_fixture;
using tls_fixture = pool::test::pg_tls_store_fixture;
using pool::test::check_fails;

work_record entry(pg_store& store, uint64_t n = 1, uint32_t attempt = 1) {
  return pool::test::store_entry(store, n, attempt);
}

} // namespace

// -- claims, leases, fencing --------------------------------------------------

TEST_CASE("two stores claiming at once never hand out the same entry" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto b = fx.open();
  constexpr uint64_t count = 400;
  for (uint64_t i = 1; i <= count; ++i)
    REQUIRE(!a->push(entry(*a, i), fx.now, fx.now));
  REQUIRE(!a->commit());
  CHECK(b->available(fx.now) == count);
  // Each store on its own thread, claiming in batches and committing.
  auto drain = [&](pg_store& store) {
    std::vector<uint64_t> got;
    while (auto x = store.pop_due(fx.now)) {
      got.push_back(x->id.operation);
      if (got.size() % 5 == 0)
        REQUIRE(!store.commit());
    }
    REQUIRE(!store.commit());
    return got;
  };
  auto fa = std::async(std::launch::async, drain, std::ref(*a));
  auto fb = std::async(std::launch::async, drain, std::ref(*b));
  auto got_a = fa.get();
  auto got_b = fb.get();
  MESSAGE("store a claimed " << got_a.size() << ", store b " << got_b.size());
  std::set<uint64_t> all{got_a.begin(), got_a.end()};
  for (auto id : got_b)
    CHECK_MESSAGE(all.insert(id).second, "op#" << id << " handed out twice");
  CHECK(all.size() == count);
  CHECK(fx.pg.query("SELECT count(*) FROM pool.operations WHERE state = 1") ==
        std::to_string(count));
}

TEST_CASE("an expired lease is taken back by another store and counted as a "
          "failed attempt with history" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open(pg_options{}.lease(2s));
  auto b = fx.open(pg_options{}.lease(2s));
  auto x = entry(*a);
  REQUIRE(!a->push(x, fx.now, fx.now));
  REQUIRE(!a->commit());
  auto claimed = a->pop_due(fx.now);
  REQUIRE(claimed);
  CHECK(claimed->id == x.id);
  REQUIRE(!a->commit()); // the hand-out: the attempt started
  // Store a stops renewing (as if it hung). Before the lease ends nothing
  // is taken back; after it, b takes it back.
  REQUIRE(b->renew_leases(fx.now + 1s));
  REQUIRE(!b->commit());
  CHECK(!b->pop_due(fx.now + 1s));
  auto lost = b->renew_leases(fx.now + 3s);
  REQUIRE(lost);
  CHECK(lost->empty()); // b held nothing
  REQUIRE(!b->commit());
  auto again = b->pop_due(fx.now + 3s);
  REQUIRE(again);
  CHECK(again->id == attempt_id{x.id.operation, 2});
  auto rec = b->lookup(x.id.operation);
  REQUIRE(rec);
  CHECK(rec->state == operation_state::running);
  CHECK(rec->attempt == 2);
  REQUIRE(rec->history.size() == 1);
  CHECK(rec->history[0].attempt == 1);
  CHECK(pool::is(rec->history[0].reason, pool::pool_errc::lease_lost));
  auto why = pool::describe(rec->history[0].reason);
  MESSAGE(why);
  CHECK(why.find(a->owner()) != std::string::npos);
}

TEST_CASE("a store whose lease was taken back is fenced: its late outcome, "
          "failure, retry and cancel are refused as stale" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open(pg_options{}.lease(2s));
  auto b = fx.open(pg_options{}.lease(2s));
  auto x = entry(*a);
  auto y = entry(*a, 2);
  REQUIRE(!a->push(x, fx.now, fx.now));
  REQUIRE(!a->push(y, fx.now, fx.now));
  REQUIRE(!a->commit());
  REQUIRE(a->pop_due(fx.now));
  REQUIRE(a->pop_due(fx.now));
  REQUIRE(!a->commit());
  REQUIRE(b->renew_leases(fx.now + 3s));
  REQUIRE(!b->commit());
  REQUIRE(b->pop_due(fx.now + 3s));
  REQUIRE(b->pop_due(fx.now + 3s));
  REQUIRE(!b->commit());
  auto op = x.id.operation;
  auto late = fx.now + 4s;
  // Failures, retries and cancels are checked at once...
  check_fails(a->note_failure(op, pool::attempt_failure{1, 1s, {}}),
              pool::pool_errc::lease_lost, "stale");
  check_fails(a->push(work_record{attempt_id{op, 2}, x.payload}, late, late),
              pool::pool_errc::lease_lost, "op#");
  CHECK(a->remove(op) == 0);
  // ... outcomes go out batched with the group: the commit refuses them.
  REQUIRE(!a->finish(op, caf::make_message(1), late));
  REQUIRE(!a->commit());
  CHECK(a->fenced() == std::vector<uint64_t>{op});
  CHECK(a->lost_pushes().empty());
  // The refusals changed nothing and did not spoil a's group.
  REQUIRE(!a->commit());
  CHECK(a->fenced().empty());
  // a learns that the other lease is gone at its next renewal.
  auto lost = a->renew_leases(late);
  REQUIRE(lost);
  CHECK(*lost == std::vector<uint64_t>{y.id.operation});
  REQUIRE(!a->commit());
  // The holder finishes.
  REQUIRE(!b->finish(op, caf::make_message(42), late));
  REQUIRE(!b->commit());
  CHECK(b->fenced().empty());
  auto rec = a->lookup(op);
  REQUIRE(rec);
  CHECK(rec->state == operation_state::done);
  CHECK(rec->result.get_as<int>(0) == 42);
}

TEST_CASE("renewed leases are not taken back" * doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open(pg_options{}.lease(2s));
  auto b = fx.open(pg_options{}.lease(2s));
  REQUIRE(!a->push(entry(*a), fx.now, fx.now));
  REQUIRE(!a->commit());
  REQUIRE(a->pop_due(fx.now));
  CHECK(a->lease_interval() == caf::timespan{2s} / 3);
  for (auto t = 1s; t <= 6s; t += 1s) {
    auto lost = a->renew_leases(fx.now + t);
    REQUIRE(lost);
    CHECK(lost->empty());
    REQUIRE(!a->commit());
    REQUIRE(b->renew_leases(fx.now + t + 500ms));
    REQUIRE(!b->commit());
    CHECK(!b->pop_due(fx.now + t + 500ms));
  }
}

// -- what every durable store promises ----------------------------------------

TEST_CASE("nothing is visible to other stores before the commit, and outcomes "
          "and histories are, from any store" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto b = fx.open();
  auto x = entry(*a);
  REQUIRE(!a->push(x, fx.now, fx.now));
  CHECK(!b->pop_due(fx.now));
  CHECK(!b->lookup(x.id.operation));
  REQUIRE(!a->commit());
  auto y = b->pop_due(fx.now);
  REQUIRE(y);
  CHECK(y->payload.get_as<int32_t>(0) == 7);
  auto failure = caf::make_error(pool::pool_errc::timed_out, std::string{"x"});
  REQUIRE(!b->note_failure(y->id.operation, {1, 5ms, failure}));
  REQUIRE(!b->finish(y->id.operation, failure, fx.now));
  REQUIRE(!b->commit());
  auto rec = a->lookup(x.id.operation);
  REQUIRE(rec);
  CHECK(rec->state == operation_state::failed);
  CHECK(rec->error == failure);
  REQUIRE(rec->history.size() == 1);
  CHECK(rec->history[0].after_submit == 5ms);
  CHECK(rec->history[0].reason == failure);
}

TEST_CASE("delayed entries come out by wall time, in any store" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto b = fx.open();
  auto x = entry(*a);
  REQUIRE(!a->push(x, fx.now + 10s, fx.now));
  REQUIRE(!a->commit());
  CHECK(b->delayed(fx.now) == 1);
  CHECK(b->available(fx.now) == 0);
  auto due = b->next_due(fx.now);
  REQUIRE(due);
  CHECK(*due - (fx.now + 10s) < 100ms);
  CHECK((fx.now + 10s) - *due < 100ms);
  CHECK(!b->pop_due(fx.now + 9s));
  CHECK(b->pop_due(*due + 1ms));
}

TEST_CASE("ids of different stores never collide" * doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto b = fx.open();
  CHECK(a->last_operation_id() != b->last_operation_id());
  CHECK(a->last_operation_id() % (uint64_t{1} << 32) == 0);
  REQUIRE(!a->push(entry(*a, 1), fx.now, fx.now));
  REQUIRE(!a->commit());
  CHECK(a->last_operation_id() % (uint64_t{1} << 32) == 1);
}

// -- unique keys --------------------------------------------------------------

TEST_CASE("a unique key is found from any store, and taken only once even "
          "when two stores race for it" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto b = fx.open();
  auto x = entry(*a);
  REQUIRE(!a->set_key(x.id.operation, "job-1"));
  REQUIRE(!a->push(x, fx.now, fx.now));
  REQUIRE(!a->commit());
  CHECK(b->find_key("job-1", fx.now, 0s) == x.id.operation);
  auto y = entry(*b);
  check_fails(b->set_key(y.id.operation, "job-1"), pool::pool_errc::key_taken,
              "job-1");
  // The race: both see the key free; the unique index decides at b's push,
  // which waits for a's commit.
  auto x2 = entry(*a, 2);
  auto y2 = entry(*b, 2);
  REQUIRE(!a->set_key(x2.id.operation, "job-2"));
  REQUIRE(!a->push(x2, fx.now, fx.now));
  REQUIRE(!b->set_key(y2.id.operation, "job-2"));
  auto pushed = std::async(std::launch::async,
                           [&] { return b->push(y2, fx.now, fx.now); });
  CHECK(pushed.wait_for(300ms) == std::future_status::timeout);
  REQUIRE(!a->commit());
  auto err = pushed.get();
  check_fails(err, pool::pool_errc::key_taken, "job-2");
  auto& context = err.context();
  REQUIRE(context.match_element<uint64_t>(1));
  CHECK(context.get_as<uint64_t>(1) == x2.id.operation);
  // b's group is unharmed.
  REQUIRE(!b->commit());
  CHECK(b->lost_pushes().empty());
  CHECK(fx.pg.query("SELECT count(*) FROM pool.operations") == "2");
}

// -- notifications ------------------------------------------------------------

TEST_CASE("a commit with new work or outcomes wakes the other stores" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto b = fx.open(pg_options{}.safety_poll(1h));
  std::mutex mtx;
  std::condition_variable cv;
  int wakeups = 0;
  b->set_wakeup([&] {
    std::lock_guard<std::mutex> guard{mtx};
    ++wakeups;
    cv.notify_all();
  });
  auto wait_for_wakeup = [&] {
    std::unique_lock<std::mutex> guard{mtx};
    return cv.wait_for(guard, 20s, [&] { return wakeups > 0; });
  };
  auto x = entry(*a);
  REQUIRE(!a->push(x, fx.now, fx.now));
  REQUIRE(!a->commit());
  REQUIRE(wait_for_wakeup());
  auto seen = b->poll_notifications();
  CHECK(seen.work);
  CHECK(seen.finished.empty());
  CHECK(!seen.missed);
  wakeups = 0;
  REQUIRE(a->pop_due(fx.now));
  REQUIRE(!a->finish(x.id.operation, caf::make_message(1), fx.now));
  REQUIRE(!a->commit());
  REQUIRE(wait_for_wakeup());
  seen = b->poll_notifications();
  CHECK(seen.finished == std::vector<uint64_t>{x.id.operation});
}

TEST_CASE("without notifications, the safety poll wakes the store" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open(pg_options{}.safety_poll(200ms));
  std::promise<void> woken;
  std::atomic<bool> once{false};
  a->set_wakeup([&] {
    if (!once.exchange(true))
      woken.set_value();
  });
  REQUIRE(woken.get_future().wait_for(20s) == std::future_status::ready);
  CHECK(a->poll_notifications().work);
}

TEST_CASE("notification payloads parse" * doctest::timeout(10)) {
  pool::store_notifications x;
  std::string from;
  CHECK(pool::detail::parse_notification("h:1:2 w", from, x));
  CHECK(from == "h:1:2");
  CHECK(x.work);
  CHECK(pool::detail::parse_notification("h:1:3 d 4,5,6", from, x));
  CHECK(x.finished == std::vector<uint64_t>{4, 5, 6});
  CHECK(!pool::detail::parse_notification("garbage", from, x));
  CHECK(!pool::detail::parse_notification("h d 1,x", from, x));
}

TEST_CASE("after the server restarts, stores reconnect by themselves and "
          "say that notifications may have been missed" *
          doctest::timeout(90)) {
  fixture fx;
  auto a = fx.open();
  auto b = fx.open(pg_options{}.safety_poll(1h));
  std::mutex mtx;
  std::condition_variable cv;
  bool missed = false;
  b->set_wakeup([&] {
    std::lock_guard<std::mutex> guard{mtx};
    missed = true;
    cv.notify_all();
  });
  auto x = entry(*a);
  REQUIRE(!a->push(x, fx.now, fx.now));
  REQUIRE(!a->commit());
  {
    // The first wake-up: a's commit.
    std::unique_lock<std::mutex> guard{mtx};
    REQUIRE(cv.wait_for(guard, 20s, [&] { return missed; }));
    missed = false;
  }
  CHECK(!b->poll_notifications().missed);
  fx.pg.restart(500ms);
  // The connections were cut: the next writes and claims open new ones.
  auto y = entry(*a, 2);
  REQUIRE(!a->push(y, fx.now, fx.now));
  REQUIRE(!a->commit());
  std::set<uint64_t> got;
  while (auto z = b->pop_due(fx.now))
    got.insert(z->id.operation);
  CHECK(got == std::set<uint64_t>{x.id.operation, y.id.operation});
  REQUIRE(!b->commit());
  // b's listener connected again and says it may have missed something.
  auto deadline = std::chrono::steady_clock::now() + 20s;
  bool reported = false;
  while (!reported && std::chrono::steady_clock::now() < deadline) {
    {
      std::unique_lock<std::mutex> guard{mtx};
      cv.wait_for(guard, 1s, [&] { return missed; });
      missed = false;
    }
    reported = b->poll_notifications().missed;
  }
  CHECK(reported);
}

TEST_CASE("while the server is down, a commit fails with a clear error, "
          "and the first commit after it writes what waited" *
          doctest::timeout(90)) {
  fixture fx;
  auto a = fx.open();
  auto x = entry(*a);
  REQUIRE(!a->push(x, fx.now, fx.now));
  REQUIRE(!a->commit());
  auto y = entry(*a, 2);
  REQUIRE(!a->push(y, fx.now, fx.now));
  std::thread outage{[&] { fx.pg.restart(3s); }};
  std::this_thread::sleep_for(1s); // the server is down now
  auto err = a->commit();
  if (!err)
    MESSAGE("the commit won the race with the shutdown");
  else
    check_fails(err, pool::pool_errc::store_failed, "connection");
  // Nothing is given up within the outage limit (5 min).
  CHECK(a->lost_pushes().empty());
  outage.join();
  REQUIRE(!a->commit());
  auto b = fx.open();
  std::set<uint64_t> got;
  while (auto z = b->pop_due(fx.now))
    got.insert(z->id.operation);
  CHECK(got.count(x.id.operation) == 1);
  CHECK(got.count(y.id.operation) == 1);
  // a works again.
  REQUIRE(!a->push(entry(*a, 3), fx.now, fx.now));
  REQUIRE(!a->commit());
}
