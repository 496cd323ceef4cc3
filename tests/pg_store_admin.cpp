// The PostgreSQL store, against a private PostgreSQL 15 server per test:
// the global concurrency limit, retention, migrations of the schema, and
// clear errors for bad input (including SCRAM and TLS). (Claims, leases,
// keys and notifications: tests/pg_store.cpp.)
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
