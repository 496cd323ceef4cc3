// The in-memory store: FIFO for due entries, (due, insertion) order for
// delayed ones, never an entry before it is due.
#include <doctest/doctest.h>

#include <chrono>

#include "pool/memory_store.hpp"

using namespace std::chrono_literals;
using pool::memory_store;
using pool::work_record;

namespace {

work_record entry(uint64_t id) {
  return work_record{pool::attempt_id{id, 1}, caf::make_message(int(id))};
}

memory_store::time_point t0{std::chrono::seconds(1000)};

} // namespace

TEST_CASE("due entries come out first in, first out" * doctest::timeout(10)) {
  memory_store store;
  for (uint64_t i = 1; i <= 3; ++i)
    REQUIRE(!store.push(entry(i), t0, t0));
  CHECK(store.available(t0) == 3);
  for (uint64_t i = 1; i <= 3; ++i) {
    auto x = store.pop_due(t0);
    REQUIRE(x);
    CHECK(x->id.operation == i);
  }
  CHECK(!store.pop_due(t0));
  CHECK(!store.next_due(t0));
}

TEST_CASE("a delayed entry is not handed out one tick before it is due" *
          doctest::timeout(10)) {
  memory_store store;
  REQUIRE(!store.push(entry(1), t0 + 10s, t0));
  CHECK(store.available(t0) == 0);
  CHECK(store.delayed(t0) == 1);
  CHECK(store.next_due(t0) == t0 + 10s);
  CHECK(!store.pop_due(t0 + 10s - 1ns));
  auto x = store.pop_due(t0 + 10s);
  REQUIRE(x);
  CHECK(x->id.operation == 1);
  CHECK(store.delayed(t0 + 10s) == 0);
}

TEST_CASE("delayed entries are ordered by due time, then by insertion" *
          doctest::timeout(10)) {
  memory_store store;
  REQUIRE(!store.push(entry(1), t0 + 30s, t0));
  REQUIRE(!store.push(entry(2), t0 + 10s, t0));
  REQUIRE(!store.push(entry(3), t0 + 20s, t0));
  REQUIRE(!store.push(entry(4), t0 + 10s, t0));
  std::vector<uint64_t> order;
  while (auto x = store.pop_due(t0 + 60s))
    order.push_back(x->id.operation);
  CHECK(order == std::vector<uint64_t>{2, 4, 3, 1});
}

TEST_CASE("an entry that fell due earlier stays ahead of a later submit" *
          doctest::timeout(10)) {
  memory_store store;
  REQUIRE(!store.push(entry(1), t0 + 5s, t0));
  // Pushed at t0 + 7s, after entry 1 became due: entry 1 comes first.
  REQUIRE(!store.push(entry(2), t0 + 7s, t0 + 7s));
  CHECK(store.pop_due(t0 + 8s)->id.operation == 1);
  CHECK(store.pop_due(t0 + 8s)->id.operation == 2);
}
