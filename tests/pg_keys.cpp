// Unique keys of the PostgreSQL store across stores (libpool/src/postgres/
// pg_records.cpp), against a private server: a key that one store found
// free is checked again at its push, finished operations included, and a
// key whose lookup failed while the server was away is not taken blind.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "child_process.hpp"
#include "pg_store_fixture.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::pg_store;
using pool::work_record;

namespace {

using fixture = pool::test::pg_store_fixture;

work_record entry(pg_store& store, uint64_t n) {
  return work_record{attempt_id{store.last_operation_id() + n, 1},
                     caf::make_message(int32_t{1})};
}

} // namespace

TEST_CASE("a key found free is checked again at the push: an operation "
          "with it that another store ran meanwhile is found" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto b = fx.open();
  auto window = caf::timespan::max();
  CHECK(!a->find_key("line:1", fx.now, window));
  // Meanwhile b submits, runs and finishes an operation with the key.
  auto y = entry(*b, 1);
  REQUIRE(!b->set_key(y.id.operation, "line:1"));
  REQUIRE(!b->push(y, fx.now, fx.now));
  REQUIRE(!b->commit());
  REQUIRE(b->pop_due(fx.now));
  REQUIRE(!b->finish(y.id.operation, caf::make_message(2), fx.now));
  REQUIRE(!b->commit());
  // a's push of the key: refused with b's operation (the unique index
  // covers unfinished operations only).
  auto x = entry(*a, 1);
  auto err = a->set_key(x.id.operation, "line:1");
  REQUIRE(pool::is(err, pool::pool_errc::key_taken));
  REQUIRE(err.context().match_element<uint64_t>(1));
  CHECK(err.context().get_as<uint64_t>(1) == y.id.operation);
  // Without a lookup before, only unfinished operations count (the
  // window is the caller's).
  auto z = entry(*a, 2);
  CHECK(!a->set_key(z.id.operation, "line:1"));
}

TEST_CASE("a key whose lookup failed while the server was away is refused "
          "at the push until a lookup of it succeeds" *
          doctest::timeout(60)) {
  fixture fx;
  auto a = fx.open();
  auto window = caf::timespan::max();
  fx.pg.stop();
  CHECK(!a->find_key("line:2", fx.now, window)); // unreadable: not found
  fx.pg.start();
  auto x = entry(*a, 1);
  auto err = a->set_key(x.id.operation, "line:2");
  MESSAGE(pool::describe(err));
  CHECK(pool::is(err, pool::pool_errc::store_failed));
  CHECK(pool::describe(err).find("cannot be checked") != std::string::npos);
  // Looked up again once the store reconnected, the key is free.
  CHECK(pool::test::eventually(
      [&] {
        return !a->find_key("line:2", fx.now, window)
               && !a->set_key(x.id.operation, "line:2");
      },
      10s));
}
