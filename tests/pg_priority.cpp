// Options per submit on the PostgreSQL store (schema version 3), against a
// private PostgreSQL 15 server per test: claims hand out higher priorities
// first and FIFO within one, also through the batched push; aging lets a
// long-waiting entry overtake; a claiming store learns the entry's
// priority, concurrency key, attempts and timeout; lookups return the
// options; a version-2 schema is migrated with its rows.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "pool/errors.hpp"
#include "pool/job_options.hpp"
#include "pool/pg_store.hpp"

#include "pg_conn.hpp"
#include "pg_schema.hpp"
#include "pg_store_fixture.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::job_options;
using pool::pg_options;
using pool::pg_store;
using pool::work_record;

namespace {

using fixture = pool::test::pg_store_fixture;

// Operation `id`'s first attempt with `priority` and `key`.
work_record entry(uint64_t id, int32_t priority, std::string key = {}) {
  work_record x{attempt_id{id, 1},
                caf::make_message(int32_t{7})};
  x.priority = priority;
  x.concurrency_key = std::move(key);
  return x;
}

// Pops every due entry; returns their operation ids, in order, minus `base`.
std::vector<uint64_t> drain(pg_store& store, pg_store::time_point now,
                            uint64_t base) {
  std::vector<uint64_t> result;
  while (auto x = store.pop_due(now))
    result.push_back(x->id.operation - base);
  return result;
}

} // namespace

TEST_CASE("claims hand out higher priorities first, FIFO within one, "
          "through single and batched pushes" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  // Two at a time: the server's order decides, not only the sorting of
  // one claim.
  auto b = fx.open(pg_options{}.claim_batch(2));
  auto base = a->last_operation_id();
  // Priorities of operations 1..8; 5 carries options (a single push), the
  // rest go through the batched push.
  std::vector<int32_t> priorities{0, 5, 1, 5, 9, 0, 1, 9};
  for (uint64_t n = 1; n <= priorities.size(); ++n) {
    if (n == 5)
      REQUIRE(!a->set_options(base + n, job_options{}.priority(9)));
    REQUIRE(!a->push(entry(base + n, priorities[n - 1], n == 8 ? "k" : ""),
                     fx.now, fx.now));
  }
  REQUIRE(!a->commit());
  // Another store claims them: 9s, then 5s, then 1s, then 0s.
  CHECK(drain(*b, fx.now, base)
        == std::vector<uint64_t>{5, 8, 2, 4, 3, 7, 1, 6});
}

TEST_CASE("a claiming store learns the entry's priority, key, attempts "
          "and timeout, and lookups return the options" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto b = fx.open();
  auto id = a->last_operation_id() + 1;
  auto opts = job_options{}.priority(4).max_attempts(6).attempt_timeout(3s)
                  .concurrency_key("tenant-a");
  REQUIRE(!a->set_options(id, opts));
  REQUIRE(!a->push(entry(id, 4, "tenant-a"), fx.now, fx.now));
  REQUIRE(!a->commit());
  auto x = b->pop_due(fx.now);
  REQUIRE(x);
  CHECK(x->id.operation == id);
  CHECK(x->priority == 4);
  CHECK(x->concurrency_key == "tenant-a");
  CHECK(x->max_attempts == 6);
  CHECK(x->budget == caf::timespan{3s});
  // A retry (a new push without options) keeps the stored options.
  work_record retry{attempt_id{id, 2}, caf::make_message(int32_t{7})};
  retry.priority = 4;
  retry.concurrency_key = "tenant-a";
  REQUIRE(!b->push(retry, fx.now, fx.now));
  REQUIRE(!b->commit());
  auto rec = a->lookup(id);
  REQUIRE(rec);
  CHECK(rec->options.priority() == 4);
  CHECK(rec->options.max_attempts() == 6);
  CHECK(rec->options.attempt_timeout() == caf::timespan{3s});
  CHECK(rec->options.concurrency_key() == "tenant-a");
  auto again = a->pop_due(fx.now);
  REQUIRE(again);
  CHECK(again->id.attempt == 2);
  CHECK(again->max_attempts == 6);
  // An entry without options: the pool's defaults.
  REQUIRE(!a->push(entry(id + 1, 0), fx.now, fx.now));
  REQUIRE(!a->commit());
  auto plain = b->pop_due(fx.now);
  REQUIRE(plain);
  CHECK(plain->max_attempts == 0);
  CHECK(plain->budget == caf::timespan{0});
  CHECK(plain->concurrency_key.empty());
}

TEST_CASE("with aging, an entry gains a level per step it has waited" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto base = a->last_operation_id();
  // Operation 1 (priority 0) due 50 s ago; operation 2 (priority 3) due
  // now; operation 3 (priority 9) due now.
  REQUIRE(!a->push(entry(base + 1, 0), fx.now, fx.now));
  REQUIRE(!a->push(entry(base + 2, 3), fx.now, fx.now));
  REQUIRE(!a->push(entry(base + 3, 9), fx.now, fx.now));
  REQUIRE(!a->commit());
  // (An entry due now is stored with the server's time: age it there.)
  fx.pg.sql("UPDATE pool.operations SET due = due - 50000000000 WHERE id = "
            + std::to_string(base + 1));
  auto strict = fx.open(pg_options{}.claim_batch(1));
  auto aged = fx.open();
  aged->set_priority_aging(caf::timespan{10s}); // operation 1: level 5
  // Strict order: the store without aging takes priority 9 first.
  auto first_strict = strict->pop_due(fx.now);
  REQUIRE(first_strict);
  CHECK(first_strict->id.operation - base == 3);
  // Aged: the old priority-0 entry (level 5) before priority 3.
  CHECK(drain(*aged, fx.now, base) == std::vector<uint64_t>{1, 2});
}

TEST_CASE("a version-2 schema is migrated to 3 and keeps its rows" *
          doctest::timeout(60)) {
  fixture fx;
  {
    pool::detail::pg_conn db{fx.pg.conninfo(), 5s};
    REQUIRE(!db.connect());
    REQUIRE(!pool::detail::pg_migrate(db, "pool", 2));
  }
  fx.pg.sql("INSERT INTO pool.operations (id, queue, state, attempt, due, "
            "payload, submitted) VALUES (7, 'default', 0, 1, 0, '\\x00', 0)");
  auto store = fx.open();
  CHECK(fx.pg.query("SELECT value FROM pool.meta WHERE name = "
                    "'schema_version'")
        == std::to_string(pg_store::schema_version));
  CHECK(fx.pg.query("SELECT priority::text || '/' || coalesce(ckey, '-') "
                    "FROM pool.operations WHERE id = 7")
        == "0/-");
}
