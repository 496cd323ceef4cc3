// The worker roster on its own: phases and their counts, the sleeper stack,
// names that never outlive their worker, and the resize plan.
#include <doctest/doctest.h>

#include <chrono>

#include <pool/detail/worker_roster.hpp>

using namespace std::chrono_literals;
using pool::worker_phase;
using pool::worker_ref;
using pool::worker_roster;

namespace {

using time_point = worker_roster::time_point;

const time_point t0{1000s};

pool::worker_handle fake(size_t n) {
  return pool::worker_handle{caf::actor{},
                             reinterpret_cast<const void*>(n * 16)};
}

/// A roster of `n` local workers, added at t0 + i seconds (so that the
/// first one added has slept longest).
worker_roster local_workers(size_t n, std::vector<worker_ref>& refs) {
  worker_roster roster;
  roster.set_configured(n);
  for (size_t i = 0; i < n; ++i)
    refs.push_back(
        roster.add(fake(i + 1), false, t0 + std::chrono::seconds(i)));
  return roster;
}

} // namespace

TEST_CASE("roster: counts by phase always add up to the size" *
          doctest::timeout(10)) {
  std::vector<worker_ref> w;
  auto roster = local_workers(4, w);
  CHECK(roster.size() == 4);
  CHECK(roster.sleeping() == 4);
  roster.set_phase(w[0], worker_phase::waiting, t0);
  roster.set_phase(w[1], worker_phase::working, t0);
  roster.set_phase(w[2], worker_phase::working, t0);
  CHECK(roster.sleeping() == 1);
  CHECK(roster.waiting() == 1);
  CHECK(roster.busy() == 2);
  CHECK(roster.busy_high() == 2);
  CHECK(roster.consistent());
  roster.remove(w[1]);
  CHECK(roster.busy() == 1);
  CHECK(roster.size() == 3);
  CHECK(roster.consistent());
  CHECK(roster.busy_high() == 2);
}

TEST_CASE("roster: the most recently slept worker is the top sleeper" *
          doctest::timeout(10)) {
  std::vector<worker_ref> w;
  auto roster = local_workers(3, w);
  CHECK(roster.top_sleeper() == w[2]);
  roster.set_phase(w[0], worker_phase::waiting, t0 + 10s);
  roster.set_phase(w[0], worker_phase::sleeping, t0 + 11s);
  CHECK(roster.top_sleeper() == w[0]);
  roster.remove(w[0]);
  CHECK(roster.top_sleeper() == w[2]);
  // The longest asleep first when walking the sleepers.
  std::vector<worker_ref> order;
  roster.for_each(worker_phase::sleeping, [&](worker_ref ref, auto&) {
    order.push_back(ref);
    return true;
  });
  CHECK(order == std::vector<worker_ref>{w[1], w[2]});
}

TEST_CASE("roster: the name of a worker that left never names another" *
          doctest::timeout(10)) {
  worker_roster roster;
  auto first = roster.add(fake(1), false, t0);
  roster.remove(first);
  CHECK(roster.get(first) == nullptr);
  CHECK(!roster.find(fake(1).key));
  // The slot is reused, under a new name.
  auto second = roster.add(fake(2), false, t0);
  CHECK(second.index == first.index);
  CHECK(second != first);
  CHECK(roster.get(first) == nullptr);
  REQUIRE(roster.get(second) != nullptr);
  CHECK(roster.find(fake(2).key) == second);
}

TEST_CASE("roster: shrinking stops sleepers longest asleep first, then idle "
          "waiters, and marks busy ones as retiring" *
          doctest::timeout(10)) {
  std::vector<worker_ref> w;
  auto roster = local_workers(6, w);
  roster.set_phase(w[4], worker_phase::waiting, t0);
  roster.set_phase(w[5], worker_phase::working, t0);
  roster.set_phase(w[3], worker_phase::working, t0);
  // Sleeping: 0, 1, 2 (0 the longest); waiting: 4; working: 5, 3.
  auto all = [](worker_ref, const pool::worker_slot&) { return true; };
  auto step = roster.resize(1, 100, all);
  CHECK(step.spawn == 0);
  REQUIRE(step.stop.size() == 4);
  CHECK(step.stop[0].key == fake(1).key);
  CHECK(step.stop[1].key == fake(2).key);
  CHECK(step.stop[2].key == fake(3).key);
  CHECK(step.stop[3].key == fake(5).key);
  CHECK(roster.retiring() == 1);
  CHECK(roster.staying_local() == 1);
  CHECK(!roster.resize_pending());
  CHECK(roster.consistent());
}

TEST_CASE("roster: a waiter that must not stop yet retires instead" *
          doctest::timeout(10)) {
  std::vector<worker_ref> w;
  auto roster = local_workers(2, w);
  roster.set_phase(w[0], worker_phase::waiting, t0);
  roster.set_phase(w[1], worker_phase::waiting, t0);
  auto step = roster.resize(1, 100, [&](worker_ref ref, auto&) {
    return ref != w[0] && ref != w[1];
  });
  CHECK(step.stop.empty());
  CHECK(roster.retiring() == 1);
}

TEST_CASE("roster: growing takes retiring workers back before spawning" *
          doctest::timeout(10)) {
  std::vector<worker_ref> w;
  auto roster = local_workers(3, w);
  for (auto ref : w)
    roster.set_phase(ref, worker_phase::working, t0);
  auto all = [](worker_ref, const pool::worker_slot&) { return true; };
  roster.resize(1, 100, all);
  CHECK(roster.retiring() == 2);
  auto step = roster.resize(4, 100, all);
  CHECK(roster.retiring() == 0);
  CHECK(step.spawn == 1); // 3 kept, 1 more
}

TEST_CASE("roster: a huge resize goes in steps of the budget, linear in the "
          "change, both ways" *
          doctest::timeout(60)) {
  worker_roster roster;
  auto all = [](worker_ref, const pool::worker_slot&) { return true; };
  auto step = roster.resize(200'000, 2000, all);
  size_t steps = 0;
  size_t n = 0;
  while (step.spawn > 0) {
    for (size_t i = 0; i < step.spawn; ++i, ++n)
      roster.add(fake(n + 1), false, t0);
    step = roster.next_resize_step(2000, all);
    ++steps;
  }
  CHECK(steps == 100);
  CHECK(roster.size() == 200'000);
  step = roster.resize(2, 2000, all);
  steps = 1;
  while (roster.resize_pending()) {
    step = roster.next_resize_step(2000, all);
    ++steps;
  }
  CHECK(roster.size() == 2);
  CHECK(steps == 100);
  CHECK(roster.consistent());
}

TEST_CASE("roster: joined workers are never stopped or marked by a resize" *
          doctest::timeout(10)) {
  worker_roster roster;
  roster.set_configured(1);
  roster.add(fake(1), true, t0);
  roster.add(fake(2), false, t0);
  roster.add(fake(3), false, t0);
  CHECK(roster.joined() == 1);
  CHECK(roster.staying_local() == 2);
  auto step = roster.resize(1, 100, [](auto, auto&) { return true; });
  REQUIRE(step.stop.size() == 1);
  CHECK(step.stop[0].key == fake(2).key);
  CHECK(roster.joined() == 1);
  CHECK(roster.size() == 2);
}
