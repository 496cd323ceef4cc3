// Per-node health on its own, on an injected clock: the failure share of a
// node against the other nodes, failures given back, quarantine, the
// operations a node must not run again, and silent nodes.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include <pool/node_health.hpp>

using namespace std::chrono_literals;
using pool::node_health;
using pool::node_health_limits;

namespace {

const node_health::time_point t0{1000s};

/// Records `n` outcomes of `node` on fresh operations from `next_op`.
void run(node_health& h, uint64_t node, int n, bool failed, uint64_t& next_op,
         node_health::time_point now = t0) {
  for (int i = 0; i < n; ++i)
    h.record(node, 0, next_op++, failed, now);
}

} // namespace

TEST_CASE("node_health: default limits are valid and bad ones are named" *
          doctest::timeout(5)) {
  CHECK(node_health_limits{}.invalid_field() == nullptr);
  auto bad = node_health_limits{};
  bad.window = 0;
  CHECK(std::string{bad.invalid_field()} == "window");
  bad = node_health_limits{};
  bad.min_sample = bad.window + 1;
  CHECK(std::string{bad.invalid_field()} == "min_sample");
  bad = node_health_limits{};
  bad.margin = 0;
  CHECK(std::string{bad.invalid_field()} == "margin");
  bad.margin = 1.5;
  CHECK(std::string{bad.invalid_field()} == "margin");
  bad = node_health_limits{};
  bad.silent_after = -1s;
  CHECK(std::string{bad.invalid_field()} == "silent_after");
}

TEST_CASE("node_health: a lone node is judged against nobody, its failures "
          "count" *
          doctest::timeout(5)) {
  node_health h;
  h.add(1, t0);
  uint64_t op = 1;
  for (int i = 0; i < 100; ++i) {
    auto v = h.record(1, 0, op++, true, t0);
    CHECK(!v.give_back);
    CHECK(!v.quarantine);
  }
  CHECK(h.share(1) == doctest::Approx(1.0));
  CHECK(!h.quarantined(1));
  CHECK(!h.avoid(1, 1)); // nowhere else to go
}

TEST_CASE("node_health: a node failing everything among healthy ones has its "
          "failures given back and is quarantined after min_sample" *
          doctest::timeout(5)) {
  node_health h; // window 64, min_sample 16, margin 0.5
  for (uint64_t n = 1; n <= 5; ++n)
    h.add(n, t0);
  uint64_t op = 1;
  for (uint64_t n = 2; n <= 5; ++n)
    run(h, n, 10, false, op);
  // Every failure of node 1 is given back; the 16th quarantines it.
  for (int i = 1; i <= 16; ++i) {
    auto v = h.record(1, 0, op++, true, t0);
    CHECK(v.give_back);
    CHECK(v.quarantine == (i == 16));
  }
  CHECK(h.quarantined(1));
  // Its failures no longer weigh on the others' share.
  CHECK(h.others(2).first == 0.0);
  CHECK(h.others(2).second == 30);
  // Late answers of a quarantined node judge nothing.
  CHECK(!h.record(1, 0, op++, true, t0).give_back);
  // Released, it starts over, and fails again at once: given back.
  h.release(1, t0 + 30s);
  CHECK(!h.quarantined(1));
  CHECK(h.share(1) == 0.0);
  auto v = h.record(1, 0, op++, true, t0 + 30s);
  CHECK(v.give_back);
  CHECK(!v.quarantine);
}

TEST_CASE("node_health: before the others hold min_sample outcomes, failures "
          "are given back but nobody is quarantined" *
          doctest::timeout(5)) {
  node_health h;
  h.add(1, t0);
  h.add(2, t0);
  uint64_t op = 1;
  run(h, 2, 5, false, op); // 5 < min_sample
  for (int i = 0; i < 40; ++i) {
    auto v = h.record(1, 0, op++, true, t0);
    CHECK(v.give_back);
    CHECK(!v.quarantine);
  }
  run(h, 2, 11, false, op); // now 16
  auto v = h.record(1, 0, op++, true, t0);
  CHECK(v.give_back);
  CHECK(v.quarantine);
}

TEST_CASE(
    "node_health: jobs that fail as often everywhere count, and quarantine "
    "nobody" *
    doctest::timeout(5)) {
  node_health h;
  for (uint64_t n = 1; n <= 3; ++n)
    h.add(n, t0);
  uint64_t op = 1;
  auto given_back = 0;
  auto quarantines = 0;
  // Each node fails 3 of 10 attempts, interleaved.
  for (int round = 0; round < 100; ++round)
    for (uint64_t n = 1; n <= 3; ++n) {
      auto v = h.record(n, 0, op++, round % 10 < 3, t0);
      given_back += v.give_back ? 1 : 0;
      quarantines += v.quarantine ? 1 : 0;
    }
  CHECK(quarantines == 0);
  // Only the very first failures, before the others had a sample, are
  // given back (each node fails its first three attempts).
  CHECK(given_back <= 9);
  CHECK(h.share(1) == doctest::Approx(0.3).epsilon(0.1));
}

TEST_CASE("node_health: a node failing somewhat more than the others, below "
          "the margin, is not quarantined" *
          doctest::timeout(5)) {
  node_health h;
  h.add(1, t0);
  h.add(2, t0);
  uint64_t op = 1;
  for (int round = 0; round < 200; ++round) {
    h.record(2, 0, op++, round % 10 == 0, t0);         // 10 %
    auto v = h.record(1, 0, op++, round % 10 < 5, t0); // 50 %
    if (round > 20)
      CHECK(!v.quarantine);
  }
  CHECK(!h.quarantined(1));
}

TEST_CASE("node_health: the window slides: old failures are forgotten" *
          doctest::timeout(5)) {
  node_health_limits limits;
  limits.window = 10;
  limits.min_sample = 5;
  node_health h{limits};
  h.add(1, t0);
  uint64_t op = 1;
  run(h, 1, 10, true, op);
  CHECK(h.share(1) == doctest::Approx(1.0));
  run(h, 1, 7, false, op);
  CHECK(h.share(1) == doctest::Approx(0.3));
  run(h, 1, 3, false, op);
  CHECK(h.share(1) == 0.0);
}

TEST_CASE("node_health: an operation a node failed avoids it while another "
          "node that has not failed it can take work" *
          doctest::timeout(5)) {
  node_health h;
  h.add(1, t0);
  h.add(2, t0);
  h.add(3, t0);
  CHECK(!h.avoid(1, 42));
  h.record(1, 0, 42, true, t0);
  CHECK(h.avoid(1, 42));
  CHECK(!h.avoid(2, 42));
  h.record(2, 0, 42, true, t0);
  CHECK(h.avoid(1, 42));
  CHECK(h.avoid(2, 42));
  CHECK(h.takers(1, 42) == std::vector<uint64_t>{3});
  CHECK(h.takers(3, 42).empty());
  CHECK(h.takers(1, 99) == std::vector<uint64_t>{2, 3});
  // Node 3 quarantined: nobody else can take it, so it runs where it may.
  h.quarantine(3);
  CHECK(!h.avoid(1, 42));
  CHECK(!h.avoid(2, 42));
  h.release(3, t0);
  CHECK(h.avoid(1, 42));
  // A success does not mark the operation.
  h.record(1, 0, 43, false, t0);
  CHECK(!h.avoid(1, 43));
  h.remove(3);
  h.remove(2);
  CHECK(!h.avoid(1, 42));
}

TEST_CASE("node_health: only the newest remembered_operations are remembered" *
          doctest::timeout(5)) {
  node_health_limits limits;
  limits.remembered_operations = 3;
  node_health h{limits};
  h.add(1, t0);
  h.add(2, t0);
  for (uint64_t op = 1; op <= 4; ++op)
    h.record(1, 0, op, true, t0);
  CHECK(!h.avoid(1, 1));
  for (uint64_t op = 2; op <= 4; ++op)
    CHECK(h.avoid(1, op));
}

TEST_CASE("node_health: a node with an attempt out and no sign of life for "
          "silent_after is silent, once" *
          doctest::timeout(5)) {
  node_health h; // silent_after 10 s
  h.add(1, t0);
  h.add(2, t0);
  // Idle nodes are never silent.
  CHECK(h.silent(t0 + 60s).empty());
  h.sent(1, 0, t0 + 60s);
  h.sent(2, 0, t0 + 60s);
  CHECK(h.silent(t0 + 69s).empty());
  // Node 2 sends heartbeats; node 1 nothing.
  h.heard(2, t0 + 65s);
  auto gone = h.silent(t0 + 70s);
  REQUIRE(gone.size() == 1);
  CHECK(gone.front() == 1);
  CHECK(!h.contains(1));
  CHECK(h.silent(t0 + 74s).empty());
  CHECK(h.silent(t0 + 75s) == std::vector<uint64_t>{2});
}

TEST_CASE("node_health: an answer or an abandoned attempt takes the attempt "
          "off the node, and a quarantined node is never silent" *
          doctest::timeout(5)) {
  node_health h;
  h.add(1, t0);
  h.add(2, t0);
  h.sent(1, 0, t0);
  h.sent(1, 1, t0);
  h.record(1, 0, 7, false, t0 + 1s);
  h.abandoned(1, 1);
  CHECK(h.silent(t0 + 100s).empty());
  h.sent(2, 3, t0);
  h.quarantine(2);
  CHECK(h.silent(t0 + 100s).empty());
  // silent_after 0: off.
  node_health_limits off;
  off.silent_after = 0s;
  node_health quiet{off};
  quiet.add(1, t0);
  quiet.sent(1, 0, t0);
  CHECK(quiet.silent(t0 + 1000s).empty());
}
