// The operation table on its own: ids, the one staleness check, phases and
// the counts they give (available, delayed, held), keys and orphans.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include <caf/make_message.hpp>

#include <pool/detail/operation_table.hpp>

using namespace std::chrono_literals;
using pool::attempt_id;
using pool::operation;
using pool::operation_phase;
using pool::operation_table;

namespace {

using time_point = operation_table::time_point;

const time_point t0{1000s};

operation op_due(time_point due) {
  operation op;
  op.payload = caf::make_message(1);
  op.submitted_at = t0;
  op.stamp = due;
  return op;
}

pool::worker_ref worker(uint32_t n) {
  return pool::worker_ref{n, 1};
}

} // namespace

TEST_CASE("table: ids count up, an adopted id moves the next one past it" *
          doctest::timeout(10)) {
  operation_table table;
  CHECK(table.add(op_due(t0), t0) == 1);
  CHECK(table.add(op_due(t0), t0) == 2);
  table.adopt(41, op_due(t0), t0);
  CHECK(table.add(op_due(t0), t0) == 42);
  CHECK(table.size() == 4);
}

TEST_CASE("table: current() is the one staleness check" *
          doctest::timeout(10)) {
  operation_table table;
  auto id = table.add(op_due(t0), t0);
  CHECK(table.current(attempt_id{id, 1}) != nullptr);
  CHECK(table.current(attempt_id{id, 2}) == nullptr); // not yet
  table.hold(id, worker(1), t0);
  table.wait(id, 2, t0 + 1s, t0); // retried: attempt 2, in a second
  CHECK(table.current(attempt_id{id, 1}) == nullptr); // moved on
  CHECK(table.current(attempt_id{id, 2}) != nullptr);
  table.end(id);
  CHECK(table.current(attempt_id{id, 2}) == nullptr); // ended
}

TEST_CASE("table: waiting operations count as available once due, held "
          "ones as held" *
          doctest::timeout(10)) {
  operation_table table;
  auto now_id = table.add(op_due(t0), t0);
  auto later_id = table.add(op_due(t0 + 10s), t0);
  CHECK(table.available(t0) == 1);
  CHECK(table.delayed(t0) == 1);
  CHECK(table.held() == 0);
  CHECK(table.available(t0 + 10s - 1ns) == 1);
  CHECK(table.available(t0 + 10s) == 2);
  table.hold(now_id, worker(1), t0 + 10s);
  CHECK(table.available(t0 + 10s) == 1);
  CHECK(table.held() == 1);
  CHECK(table.waiting() == 1);
  // Back to waiting, delayed again: counted delayed until then.
  table.wait(now_id, 2, t0 + 20s, t0 + 10s);
  CHECK(table.available(t0 + 10s) == 1);
  CHECK(table.delayed(t0 + 10s) == 1);
  CHECK(table.available(t0 + 20s) == 2);
  table.end(later_id);
  CHECK(table.available(t0 + 20s) == 1);
  table.end(now_id);
  CHECK(table.available(t0 + 30s) == 0);
  CHECK(table.empty());
}

TEST_CASE("table: a delayed operation that ended or moved on is no longer "
          "counted when its old due time comes" *
          doctest::timeout(10)) {
  operation_table table;
  auto a = table.add(op_due(t0 + 5s), t0);
  auto b = table.add(op_due(t0 + 5s), t0);
  table.end(a);
  table.wait(b, 2, t0 + 50s, t0); // moved on to a later due time
  CHECK(table.available(t0 + 5s) == 0);
  CHECK(table.delayed(t0 + 5s) == 1);
  CHECK(table.available(t0 + 50s) == 1);
}

TEST_CASE("table: many waits of one operation keep the delayed heap small" *
          doctest::timeout(10)) {
  operation_table table;
  auto id = table.add(op_due(t0 + 1h), t0);
  for (uint32_t i = 2; i < 10000; ++i)
    table.wait(id, i, t0 + 1h + std::chrono::seconds(i), t0);
  CHECK(table.available(t0) == 0);
  CHECK(table.delayed(t0) == 1);
  CHECK(table.available(t0 + 2h + 10000s) == 1);
}

TEST_CASE("table: unique keys and histories live and end with the "
          "operation" *
          doctest::timeout(10)) {
  operation_table table;
  auto id = table.add(op_due(t0), t0);
  table.set_key(id, "invoice-7");
  table.extras_of(id).history.push_back(pool::attempt_failure{1, 1s, {}});
  CHECK(table.find_key("invoice-7") == id);
  auto ended = table.end(id);
  CHECK(ended.id == id);
  REQUIRE(ended.extras);
  CHECK(ended.extras->key == "invoice-7");
  CHECK(ended.extras->history.size() == 1);
  CHECK(table.find_key("invoice-7") == 0);
  CHECK(table.find_extras(id) == nullptr);
}

TEST_CASE("table: callers are watched once, reported orphaned once down, "
          "and released when nothing is pending for them" *
          doctest::timeout(10)) {
  operation_table table;
  // (Without an actor system, addresses are empty; one caller then.)
  caf::actor_addr caller;
  auto a = table.add(op_due(t0), t0);
  auto b = table.add(op_due(t0), t0);
  CHECK(table.watch(a, caller));
  CHECK(!table.watch(b, caller));
  CHECK(!table.orphaned(a));
  table.end(a);
  CHECK(table.unwatched().empty()); // b still pending
  table.end(b);
  CHECK(table.unwatched().size() == 1);
  auto c = table.add(op_due(t0), t0);
  table.watch(c, caller);
  table.caller_down(caller);
  CHECK(table.orphaned(c));
  table.end(c);
  CHECK(table.unwatched().empty()); // down: nothing to demonitor
}

TEST_CASE("table: one long operation among 100,000 short ones keeps every "
          "id findable and the storage small" *
          doctest::timeout(10)) {
  operation_table table;
  auto long_one = table.add(op_due(t0), t0);
  table.adopt(7'000'000, op_due(t0), t0, {}, false); // another block
  uint64_t last = 0;
  for (int i = 0; i < 100000; ++i) {
    auto id = table.add(op_due(t0), t0);
    CHECK_EQ(table.find(id)->payload.get_as<int>(0), 1);
    if (i % 1000 == 999) {
      // Every id alive so far is still found; ended ones are not.
      CHECK(table.find(long_one) != nullptr);
      CHECK(table.find(7'000'000) != nullptr);
      CHECK(table.find(id - 2) == nullptr);
    }
    table.end(id - 1 == long_one ? id + 1 : id - 1);
    last = id;
  }
  CHECK(table.find(long_one) != nullptr);
  CHECK(table.find(7'000'000) != nullptr);
  CHECK(table.find(last) != nullptr);
  CHECK(table.size() == 3);
  // Every operation is visited once, whichever map holds it.
  std::vector<uint64_t> seen;
  table.for_each([&](uint64_t id, const operation&) { seen.push_back(id); });
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<uint64_t>{long_one, last, 7'000'000});
  // Ended operations give their slots back: the slab holds a few.
  CHECK(table.slots() <= 4);
  table.end(long_one);
  table.end(7'000'000);
  table.end(last);
  CHECK(table.empty());
  CHECK(table.find(last) == nullptr);
}
