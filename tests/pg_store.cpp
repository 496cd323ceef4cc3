// The PostgreSQL store, against a private PostgreSQL 15 server per test:
// claims by several stores, leases and fencing, unique keys across stores,
// notifications, the global concurrency limit, retention, migrations, and
// clear errors for bad input (including SCRAM and TLS).
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

struct tls_fixture : fixture {
  tls_fixture() : fixture(true) {
    // nop
  }
};

// A new operation of `store`, numbered from its block.
work_record entry(pg_store& store, uint64_t n = 1, uint32_t attempt = 1) {
  return work_record{attempt_id{store.last_operation_id() + n, attempt},
                     caf::make_message(int32_t{7}, std::string{"x"})};
}

// Asserts that `x` failed with `code` and mentions `text`.
template <class T>
void check_fails(const caf::expected<T>& x, pool::pool_errc code,
                 const std::string& text) {
  REQUIRE(!x);
  auto what = pool::describe(x.error());
  MESSAGE(what);
  CHECK_MESSAGE(pool::is(x.error(), code), what);
  CHECK_MESSAGE(what.find(text) != std::string::npos, what);
}

void check_fails(const caf::error& err, pool::pool_errc code,
                 const std::string& text) {
  REQUIRE(err);
  auto what = pool::describe(err);
  MESSAGE(what);
  CHECK_MESSAGE(pool::is(err, code), what);
  CHECK_MESSAGE(what.find(text) != std::string::npos, what);
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

// -- concurrency limit and retention ------------------------------------------

TEST_CASE("the concurrency limit holds across stores" * doctest::timeout(60)) {
  fixture fx;
  auto opts = pg_options{}.concurrency_limit(3);
  auto a = fx.open(opts);
  auto b = fx.open(opts);
  for (uint64_t i = 1; i <= 6; ++i)
    REQUIRE(!a->push(entry(*a, i), fx.now, fx.now));
  REQUIRE(!a->commit());
  // a's first claim takes up to the limit at once (claim_batch 8 > 3).
  auto first = a->pop_due(fx.now);
  REQUIRE(first);
  REQUIRE(!a->commit());
  CHECK(!b->pop_due(fx.now));
  CHECK(fx.pg.query("SELECT count(*) FROM pool.operations WHERE state = 1") ==
        "3");
  // One finishes: one more may run, in any store.
  REQUIRE(!a->finish(first->id.operation, caf::make_message(1), fx.now));
  REQUIRE(!a->commit());
  auto next = b->pop_due(fx.now);
  REQUIRE(next);
  REQUIRE(!b->commit());
  CHECK(!b->pop_due(fx.now));
}

TEST_CASE("retention prunes old outcomes, one store of the database at a "
          "time" *
          doctest::timeout(60)) {
  fixture fx;
  auto opts = pg_options{}.retention(1h);
  auto a = fx.open(opts);
  auto b = fx.open(opts);
  CHECK(a->prune_interval() == caf::timespan{6min});
  CHECK(!fx.open()->prune_interval());
  for (uint64_t i = 1; i <= 5; ++i)
    REQUIRE(!a->push(entry(*a, i), fx.now, fx.now));
  REQUIRE(!a->commit());
  std::vector<uint64_t> ids;
  while (auto x = a->pop_due(fx.now)) {
    ids.push_back(x->id.operation);
    REQUIRE(!a->note_failure(x->id.operation, {1, 1ms, {}}));
    REQUIRE(!a->finish(x->id.operation, caf::make_message(1), fx.now));
  }
  REQUIRE(!a->commit());
  CHECK(a->prune(fx.now + 59min, 100) == size_t{0});
  // While b prunes inside its open group, a skips.
  REQUIRE(!b->push(entry(*b), fx.now, fx.now));
  CHECK(b->prune(fx.now + 2h, 2) == size_t{2});
  CHECK(a->prune(fx.now + 2h, 100) == size_t{0});
  REQUIRE(!b->commit());
  CHECK(a->prune(fx.now + 2h, 100) == size_t{3});
  CHECK(fx.pg.query("SELECT count(*) FROM pool.operations WHERE state = 2") ==
        "0");
  CHECK(fx.pg.query("SELECT count(*) FROM pool.failures") == "0");
  CHECK(!a->lookup(ids.front()));
}

// -- schema -------------------------------------------------------------------

TEST_CASE("a schema of version 1 is migrated at open and keeps its rows" *
          doctest::timeout(60)) {
  fixture fx;
  {
    pool::detail::pg_conn db{fx.pg.conninfo(), 5s};
    REQUIRE(!db.connect());
    REQUIRE(!pool::detail::pg_migrate(db, "pool", 1));
  }
  CHECK(fx.pg.query("SELECT value FROM pool.meta WHERE name = "
                    "'schema_version'") == "1");
  // A queued row as a version-1 build wrote it (payload from a store).
  auto other = fx.open(pg_options{}.schema("scratch"));
  auto x = entry(*other);
  REQUIRE(!other->push(x, fx.now, fx.now));
  REQUIRE(!other->commit());
  fx.pg.sql("INSERT INTO pool.operations (id, queue, state, attempt, due, "
            "payload, submitted) SELECT id, 'default', 0, 1, due, payload, "
            "submitted FROM scratch.operations");
  auto store = fx.open();
  CHECK(fx.pg.query("SELECT value FROM pool.meta WHERE name = "
                    "'schema_version'")
        == std::to_string(pg_store::schema_version));
  auto y = store->pop_due(fx.now);
  REQUIRE(y);
  CHECK(y->id == x.id);
}

TEST_CASE("a schema of another program or a newer version is refused and "
          "left alone" *
          doctest::timeout(60)) {
  fixture fx;
  fx.pg.sql("CREATE SCHEMA pool; CREATE TABLE pool.orders (id int)");
  check_fails(fx.try_open(), pool::pool_errc::store_incompatible,
              "another program");
  CHECK(fx.pg.query("SELECT count(*) FROM pg_tables WHERE schemaname = "
                    "'pool'") == "1");
  fx.pg.sql("CREATE SCHEMA other; CREATE TABLE other.meta (name text "
            "PRIMARY KEY, value text); INSERT INTO other.meta VALUES "
            "('application', 'billing'), ('schema_version', '1')");
  check_fails(fx.try_open(pg_options{}.schema("other")),
              pool::pool_errc::store_incompatible, "billing");
  fx.open(pg_options{}.schema("mine"));
  fx.pg.sql("UPDATE mine.meta SET value = '99' WHERE name = "
            "'schema_version'");
  check_fails(fx.try_open(pg_options{}.schema("mine")),
              pool::pool_errc::store_incompatible, "version 99");
}

// -- bad input ----------------------------------------------------------------

TEST_CASE("bad input at open is refused with an error naming it, and "
          "nothing is created" *
          doctest::timeout(60)) {
  fixture fx;
  check_fails(fx.try_open({}, "host=127.0.0.1 port"),
              pool::pool_errc::invalid_option, "conninfo");
  check_fails(fx.try_open({}, "postgres://[::1"),
              pool::pool_errc::invalid_option, "postgres");
  auto port = pool::test::pg_free_port();
  check_fails(fx.try_open({}, "host=127.0.0.1 port=" + std::to_string(port) +
                                  " user=postgres connect_timeout=2"),
              pool::pool_errc::store_failed, "cannot reach the server");
  check_fails(fx.try_open({}, fx.pg.conninfo("nosuchdb")),
              pool::pool_errc::store_failed, "nosuchdb");
  // A user that may not create the schema.
  fx.pg.sql("CREATE ROLE plain LOGIN");
  check_fails(fx.try_open({}, fx.pg.conninfo("postgres", "plain")),
              pool::pool_errc::store_failed, "grant the user CREATE");
  CHECK(fx.pg.query("SELECT count(*) FROM pg_namespace WHERE nspname = "
                    "'pool'") == "0");
  check_fails(fx.try_open(pg_options{}.schema("Bad-Name")),
              pool::pool_errc::invalid_option, "schema");
  check_fails(fx.try_open(pg_options{}.lease(10ms)),
              pool::pool_errc::invalid_option, "lease");
  check_fails(fx.try_open(pg_options{}.queue("")),
              pool::pool_errc::invalid_option, "queue");
  CHECK(fx.pg.query("SELECT count(*) FROM pg_namespace WHERE nspname = "
                    "'pool'") == "0");
}

TEST_CASE_FIXTURE(tls_fixture,
                  "with SCRAM and TLS: the right password over verified TLS "
                  "works, and a wrong password, no TLS or an unknown CA is "
                  "refused with the reason" *
                      doctest::timeout(90)) {
  pg.sql("CREATE ROLE worker LOGIN PASSWORD 's3cret' CREATEDB; "
         "GRANT CREATE ON DATABASE postgres TO worker");
  auto base =
      pg.conninfo("postgres", "worker") + " sslrootcert=" + pg.ca_file();
  auto store = open({}, base + " sslmode=verify-full password=s3cret");
  auto x = entry(*store);
  REQUIRE(!store->push(x, now, now));
  REQUIRE(!store->commit());
  CHECK(store->pop_due(now));
  CHECK(pg.query("SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a "
                 "ON a.pid = s.pid WHERE a.usename = 'worker' AND s.ssl") !=
        "0");
  CHECK(pg.query("SELECT rolpassword LIKE 'SCRAM-SHA-256$%' FROM pg_authid "
                 "WHERE rolname = 'worker'") == "t");
  check_fails(try_open({}, base + " sslmode=verify-full password=wrong"),
              pool::pool_errc::store_failed, "authentication failed");
  check_fails(try_open({}, base + " sslmode=disable password=s3cret"),
              pool::pool_errc::store_failed, "pg_hba.conf");
  // Another CA: the server's certificate cannot be verified.
  std::string other_ca = pg.dir + "/other-ca.crt";
  auto cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=x "
             "-keyout " +
             pg.dir + "/other-ca.key -out " + other_ca + " >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  check_fails(try_open({}, pg.conninfo("postgres", "worker") +
                               " sslrootcert=" + other_ca +
                               " sslmode=verify-full password=s3cret"),
              pool::pool_errc::store_failed, "TLS");
}
