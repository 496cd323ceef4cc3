// The timed queue shared by the in-memory and SQLite stores: FIFO for due
// entries, (due, insertion) order for delayed ones, never an entry before
// it is due; restored entries keep their stored order.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "pool/timed_queue.hpp"

using namespace std::chrono_literals;
using pool::timed_queue;
using pool::work_record;

namespace {

work_record entry(uint64_t id, uint32_t attempt = 1) {
  return work_record{pool::attempt_id{id, attempt}, caf::make_message(int(id))};
}

timed_queue::time_point t0{std::chrono::seconds(1000)};

std::vector<uint64_t> drain(timed_queue& q, timed_queue::time_point now) {
  std::vector<uint64_t> result;
  while (auto x = q.pop_due(now))
    result.push_back(x->id.operation);
  return result;
}

} // namespace

TEST_CASE("due entries come out first in, first out" * doctest::timeout(10)) {
  timed_queue q;
  for (uint64_t i = 1; i <= 3; ++i)
    q.push(entry(i), t0, t0);
  CHECK(q.available(t0) == 3);
  CHECK(q.delayed(t0) == 0);
  CHECK(drain(q, t0) == std::vector<uint64_t>{1, 2, 3});
  CHECK(!q.next_due(t0));
  CHECK(q.size() == 0);
}

TEST_CASE("a delayed entry is not handed out one tick before it is due" *
          doctest::timeout(10)) {
  timed_queue q;
  q.push(entry(1), t0 + 10s, t0);
  CHECK(q.available(t0) == 0);
  CHECK(q.delayed(t0) == 1);
  CHECK(q.next_due(t0) == t0 + 10s);
  CHECK(!q.pop_due(t0 + 10s - 1ns));
  CHECK(q.available(t0 + 10s) == 1);
  CHECK(q.delayed(t0 + 10s) == 0);
  CHECK(q.pop_due(t0 + 10s)->id.operation == 1);
}

TEST_CASE("delayed entries are ordered by due time, then by insertion" *
          doctest::timeout(10)) {
  timed_queue q;
  q.push(entry(1), t0 + 30s, t0);
  q.push(entry(2), t0 + 10s, t0);
  q.push(entry(3), t0 + 20s, t0);
  q.push(entry(4), t0 + 10s, t0);
  CHECK(q.next_due(t0) == t0 + 10s);
  CHECK(drain(q, t0 + 60s) == std::vector<uint64_t>{2, 4, 3, 1});
}

TEST_CASE("an entry that fell due earlier stays ahead of a later push" *
          doctest::timeout(10)) {
  timed_queue q;
  q.push(entry(1), t0 + 5s, t0);
  // Pushed at t0 + 7s, due at once, after entry 1 became due.
  q.push(entry(2), t0 + 7s, t0 + 7s);
  CHECK(drain(q, t0 + 8s) == std::vector<uint64_t>{1, 2});
}

TEST_CASE("push returns consecutive sequence numbers" * doctest::timeout(10)) {
  timed_queue q;
  CHECK(q.next_seq() == 0);
  CHECK(q.push(entry(1), t0, t0) == 0);
  CHECK(q.push(entry(2), t0 + 1s, t0) == 1);
  CHECK(q.next_seq() == 2);
}

TEST_CASE("remove takes every entry of an operation, due or delayed, and "
          "keeps the order of the rest" *
          doctest::timeout(10)) {
  timed_queue q;
  q.push(entry(1), t0, t0);
  q.push(entry(2), t0, t0);
  q.push(entry(2, 2), t0 + 5s, t0);
  q.push(entry(3), t0 + 3s, t0);
  q.push(entry(4), t0 + 7s, t0);
  CHECK(q.remove(2) == 2);
  CHECK(q.remove(2) == 0);
  CHECK(q.remove(99) == 0);
  CHECK(q.size() == 3);
  CHECK(q.delayed(t0) == 2);
  CHECK(q.next_due(t0) == t0 + 3s);
  CHECK(drain(q, t0 + 10s) == std::vector<uint64_t>{1, 3, 4});
}

TEST_CASE("restored entries come out in (due, seq) order, due ones before "
          "later pushes, and later pushes number after them" *
          doctest::timeout(10)) {
  timed_queue q;
  // As a durable store reads rows back: in no particular order, some due
  // already, one delayed.
  q.restore(entry(3), t0 - 1s, 7);
  q.restore(entry(1), t0 - 2s, 9);
  q.restore(entry(2), t0 - 1s, 5);
  q.restore(entry(4), t0 + 5s, 8);
  CHECK(q.next_seq() == 10);
  CHECK(q.push(entry(5), t0, t0) == 10);
  CHECK(q.available(t0) == 4);
  CHECK(q.delayed(t0) == 1);
  CHECK(drain(q, t0 + 5s) == std::vector<uint64_t>{1, 2, 3, 5, 4});
}

TEST_CASE("clear drops every entry and keeps counting sequence numbers" *
          doctest::timeout(10)) {
  timed_queue q;
  q.push(entry(1), t0, t0);
  q.push(entry(2), t0 + 1s, t0);
  q.clear();
  CHECK(q.size() == 0);
  CHECK(!q.pop_due(t0 + 1s));
  CHECK(!q.next_due(t0));
  CHECK(q.push(entry(3), t0, t0) == 2);
}

// -- priorities, turns between keys, aging ------------------------------------

namespace {

work_record entry_with(uint64_t id, int32_t priority, std::string key = {}) {
  auto x = entry(id);
  x.priority = priority;
  x.concurrency_key = std::move(key);
  return x;
}

} // namespace

TEST_CASE("higher priorities come out first, FIFO within a priority" *
          doctest::timeout(10)) {
  timed_queue q;
  q.push(entry_with(1, 0), t0, t0);
  q.push(entry_with(2, 5), t0, t0);
  q.push(entry_with(3, 0), t0, t0);
  q.push(entry_with(4, 9), t0, t0);
  q.push(entry_with(5, 5), t0, t0);
  // A delayed high priority entry waits for its due time, then goes first.
  q.push(entry_with(6, 9), t0 + 5s, t0);
  CHECK(q.available(t0) == 5);
  CHECK(q.pop_due(t0)->id.operation == 4);
  CHECK(q.pop_due(t0)->id.operation == 2);
  CHECK(drain(q, t0 + 5s) == std::vector<uint64_t>{6, 5, 1, 3});
  CHECK(q.size() == 0);
}

TEST_CASE("the keys of a priority take turns, FIFO within a key" *
          doctest::timeout(10)) {
  timed_queue q;
  // A key with many entries, then two keys with one each, then entries
  // without a key (one more turn).
  for (uint64_t i = 1; i <= 5; ++i)
    q.push(entry_with(i, 0, "big"), t0, t0);
  q.push(entry_with(6, 0, "small"), t0, t0);
  q.push(entry_with(7, 0), t0, t0);
  q.push(entry_with(8, 0), t0, t0);
  q.push(entry_with(9, 0, "tiny"), t0, t0);
  CHECK(drain(q, t0) == std::vector<uint64_t>{1, 6, 7, 9, 2, 8, 3, 4, 5});
}

TEST_CASE("remove keeps the turns of the other keys" * doctest::timeout(10)) {
  timed_queue q;
  q.push(entry_with(1, 0, "a"), t0, t0);
  q.push(entry_with(2, 0, "b"), t0, t0);
  q.push(entry_with(3, 0, "c"), t0, t0);
  q.push(entry_with(4, 3, "b"), t0, t0);
  CHECK(q.remove(2) == 1);
  CHECK(q.remove(4) == 1);
  CHECK(q.available(t0) == 2);
  CHECK(drain(q, t0) == std::vector<uint64_t>{1, 3});
}

TEST_CASE("with aging, a waiting low priority entry overtakes new high ones" *
          doctest::timeout(10)) {
  timed_queue strict;
  timed_queue aged;
  aged.set_aging(10s);
  for (auto* q : {&strict, &aged}) {
    q->push(entry_with(1, 0), t0, t0);
    // Priority 3 work keeps arriving every second.
    for (uint64_t i = 0; i < 60; ++i)
      q->push(entry_with(100 + i, 3), t0 + std::chrono::seconds(i), t0);
  }
  // Strict: entry 1 waits while any priority 3 entry is due.
  auto order = [](timed_queue& q) {
    std::vector<uint64_t> taken;
    for (int s = 0; s < 60; ++s)
      if (auto x = q.pop_due(t0 + std::chrono::seconds(s)))
        taken.push_back(x->id.operation);
    return taken;
  };
  auto strict_order = order(strict);
  CHECK(std::find(strict_order.begin(), strict_order.end(), 1)
        == strict_order.end());
  // Aged: after 3 steps of 10 s, it is level 3; at 40 s it is above 3.
  auto aged_order = order(aged);
  auto at = std::find(aged_order.begin(), aged_order.end(), 1);
  REQUIRE(at != aged_order.end());
  CHECK(at - aged_order.begin() == 40);
}

TEST_CASE("pop_due_into hands out what pop_due would, in the same order, "
          "plain, keyed, prioritized and delayed entries alike" *
          doctest::timeout(10)) {
  // Two identical queues: one drained entry by entry, one in batches.
  auto fill = [](timed_queue& q) {
    for (uint64_t i = 1; i <= 200; ++i) {
      auto x = entry(i);
      if (i % 7 == 0)
        x.priority = 2;
      if (i % 5 == 0)
        x.concurrency_key = "k" + std::to_string(i % 3);
      auto due = i % 11 == 0 ? t0 + 1s : t0;
      q.push(std::move(x), due, t0);
    }
  };
  timed_queue one;
  timed_queue many;
  fill(one);
  fill(many);
  for (auto now : {t0, t0 + 2s}) {
    auto expected = drain(one, now);
    std::vector<work_record> out;
    size_t got = 0;
    for (size_t n : {1, 3, 64, 64, 64, 64}) {
      auto k = many.pop_due_into(now, n, out);
      CHECK(k <= n);
      got += k;
    }
    CHECK(got == out.size());
    std::vector<uint64_t> ids;
    for (auto& x : out)
      ids.push_back(x.id.operation);
    CHECK(ids == expected);
    CHECK(many.available(now) == 0);
  }
  CHECK(many.size() == 0);
  // Only plain entries: the fast lane keeps order and payloads.
  timed_queue plain;
  for (uint64_t i = 1; i <= 10; ++i)
    plain.push(entry(i, 2), t0, t0);
  std::vector<work_record> out;
  CHECK(plain.pop_due_into(t0, 4, out) == 4);
  CHECK(plain.pop_due_into(t0, 100, out) == 6);
  CHECK(plain.pop_due_into(t0, 100, out) == 0);
  for (uint64_t i = 1; i <= 10; ++i) {
    CHECK(out[i - 1].id == pool::attempt_id{i, 2});
    CHECK(out[i - 1].payload.get_as<int>(0) == int(i));
  }
  plain.push(entry(11), t0, t0); // (the lane works again after running dry)
  CHECK(drain(plain, t0) == std::vector<uint64_t>{11});
}

TEST_CASE("push_all adds in order, as push would, plain and keyed alike" *
          doctest::timeout(10)) {
  auto batch = [] {
    std::vector<work_record> xs;
    for (uint64_t i = 1; i <= 50; ++i) {
      xs.push_back(entry(i));
      if (i % 9 == 0)
        xs.back().priority = 1;
      if (i % 4 == 0)
        xs.back().concurrency_key = "k" + std::to_string(i % 2);
    }
    return xs;
  };
  timed_queue one;
  timed_queue all;
  one.push(entry(100), t0 + 1s, t0); // (a delayed one ahead of them)
  all.push(entry(100), t0 + 1s, t0);
  for (auto& x : batch())
    one.push(std::move(x), t0, t0);
  auto xs = batch();
  all.push_all(xs, t0);
  CHECK(all.size() == one.size());
  CHECK(all.next_seq() == one.next_seq());
  CHECK(drain(all, t0 + 2s) == drain(one, t0 + 2s));
}
