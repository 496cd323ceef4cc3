// The batched changes of the PostgreSQL store
// (libpool/src/postgres/pg_batch.cpp):
// the binary arrays they send, the adaptive claim size, and, against a
// private server, that a group's pushes and outcomes keep their order and values, that reads in
// the group see them, that a failed batch rolls the group back like any
// failed write, and that outcomes whose lease is gone are fenced at the
// commit.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "pg_batch.hpp"
#include "pg_store_fixture.hpp"

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::operation_state;
using pool::pg_options;
using pool::pg_store;
using pool::work_record;
using pool::detail::pg_array;

namespace {

using fixture = pool::test::pg_store_fixture;

work_record entry(pg_store& store, uint64_t n, int32_t value) {
  return work_record{attempt_id{store.last_operation_id() + n, 1},
                     caf::make_message(value)};
}

std::vector<char> bytes(std::initializer_list<int> xs) {
  std::vector<char> result;
  for (auto x : xs)
    result.push_back(static_cast<char>(x));
  return result;
}

} // namespace

TEST_CASE("arrays go out in PostgreSQL's binary format" *
          doctest::timeout(10)) {
  pg_array ints{20};
  ints.add_int(1);
  ints.add_null();
  // 1 dimension, has NULLs, int8; 2 elements from 1; 8 bytes of 1; NULL.
  CHECK(ints.bytes() == bytes({0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 20,
                               0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 8,
                               0, 0, 0, 0, 0, 0, 0, 1, -1, -1, -1, -1}));
  pg_array small{23};
  small.add_int(-2);
  CHECK(small.bytes() == bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23,
                                0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 4,
                                -1, -1, -1, -2}));
  pg_array blobs{17};
  blobs.add_bytes("ab", 2);
  CHECK(blobs.size() == 1);
  blobs.clear();
  CHECK(blobs.size() == 0);
  CHECK(blobs.bytes().size() == 20);
}

TEST_CASE("claims grow while the pool keeps up and shrink when entries wait" *
          doctest::timeout(10)) {
  pool::detail::pg_claim_size size{128};
  CHECK(size.next() == 8);
  // Full claims handed out quickly double, up to the maximum.
  for (size_t expected : {16, 32, 64, 128, 128}) {
    size.claimed(size.next(), size.next());
    size.drained(2ms);
    CHECK(size.next() == expected);
  }
  // A short claim (the queue ran dry) does not grow it.
  size = pool::detail::pg_claim_size{128};
  size.claimed(8, 3);
  size.drained(1ms);
  CHECK(size.next() == 8);
  // In between, it stays; slow hand-outs halve it, down to 1.
  size.claimed(8, 8);
  size.drained(50ms);
  CHECK(size.next() == 8);
  for (size_t expected : {4, 2, 1, 1}) {
    size.claimed(size.next(), size.next());
    size.drained(150ms);
    CHECK(size.next() == expected);
  }
  CHECK(pool::detail::pg_claim_size{3}.next() == 3);
}

TEST_CASE("a group's pushes and outcomes keep their order and values, and "
          "reads in the group see them" *
          doctest::timeout(120)) {
  fixture fx;
  auto a = fx.open(pg_options{}.claim_batch(1000));
  auto b = fx.open(pg_options{}.claim_batch(1000));
  // More than one batch (1,000 rows), delayed ones among them, a keyed
  // push and a read in the middle, and one operation pushed twice.
  constexpr int32_t n = 2500;
  auto first = a->last_operation_id() + 1;
  for (int32_t i = 0; i < n; ++i) {
    auto x = entry(*a, 1, i);
    auto due = i % 10 == 9 ? fx.now + 1h : fx.now;
    if (i == 1200)
      REQUIRE(!a->set_key(x.id.operation, "k"));
    REQUIRE(!a->push(x, due, fx.now));
    if (i == 1500)
      CHECK(a->find_key("k", fx.now, 0s) == first + 1200);
  }
  auto twice = work_record{attempt_id{first + 3, 1}, caf::make_message(-3)};
  REQUIRE(!a->push(twice, fx.now, fx.now));
  REQUIRE(!a->commit());
  CHECK(a->fenced().empty());
  // b sees the due ones in order, the one pushed twice where it went last.
  std::vector<int32_t> seen;
  std::vector<uint64_t> ids;
  while (auto x = b->pop_due(fx.now)) {
    seen.push_back(x->payload.get_as<int32_t>(0));
    ids.push_back(x->id.operation);
  }
  std::vector<int32_t> expected;
  for (int32_t i = 0; i < n; ++i)
    if (i % 10 != 9 && i != 3)
      expected.push_back(i);
  expected.push_back(-3);
  CHECK(seen == expected);
  CHECK(b->delayed(fx.now) == n / 10);
  // b finishes them in one group, half done, half failed.
  auto failure = caf::make_error(pool::pool_errc::timed_out, std::string{"x"});
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i % 2 == 0)
      REQUIRE(!b->finish(ids[i], caf::make_message(seen[i] * 2), fx.now));
    else
      REQUIRE(!b->finish(ids[i], failure, fx.now));
    if (i == 700) {
      auto rec = b->lookup(ids[0]);
      REQUIRE(rec);
      CHECK(rec->state == operation_state::done);
    }
  }
  REQUIRE(!b->commit());
  CHECK(b->fenced().empty());
  for (size_t i : {size_t{0}, size_t{1}, size_t{1001}, ids.size() - 1}) {
    auto rec = a->lookup(ids[i]);
    REQUIRE(rec);
    if (i % 2 == 0) {
      CHECK(rec->state == operation_state::done);
      CHECK(rec->result.get_as<int32_t>(0) == seen[i] * 2);
    } else {
      CHECK(rec->state == operation_state::failed);
      CHECK(rec->error == failure);
    }
  }
  CHECK(fx.pg.query("SELECT count(*) FROM pool.operations WHERE state = 1")
        == "0");
}

TEST_CASE("a batch whose connection died rolls the group back: the next "
          "commit writes its pushes and outcomes again" *
          doctest::timeout(120)) {
  fixture fx;
  auto a = fx.open();
  auto x = entry(*a, 1, 1);
  REQUIRE(!a->push(x, fx.now, fx.now));
  REQUIRE(!a->commit());
  REQUIRE(a->pop_due(fx.now));
  auto y = entry(*a, 1, 2);
  REQUIRE(!a->push(y, fx.now, fx.now));
  REQUIRE(!a->finish(x.id.operation, caf::make_message(10), fx.now));
  // The store's connection dies before the batch goes out.
  fx.pg.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
            "pid <> pg_backend_pid() AND backend_type = 'client backend'");
  // The commit reconnects and writes both again, at once or (when its
  // first statement found the connection gone) in the next commit; an
  // outage gives nothing up.
  if (auto err = a->commit()) {
    CHECK(a->lost_pushes().empty());
    REQUIRE(!a->commit());
  }
  CHECK(a->lost_pushes().empty());
  auto rec = a->lookup(x.id.operation);
  REQUIRE(rec);
  CHECK(rec->state == operation_state::done);
  CHECK(rec->result.get_as<int32_t>(0) == 10);
  auto queued = a->lookup(y.id.operation);
  REQUIRE(queued);
  CHECK(queued->state == operation_state::queued);
  CHECK(fx.pg.query("SELECT count(*) FROM pool.operations") == "2");
}
