// flow_gate: pause and the start-rate limit, with an injected clock.
#include <doctest/doctest.h>

#include <algorithm>
#include <deque>
#include <random>

#include "pool/errors.hpp"
#include "pool/flow_gate.hpp"

using namespace std::chrono_literals;
using pool::flow_gate;
using pool::start_rate;
using time_point = flow_gate::time_point;

namespace {

const time_point t0 = time_point{} + 1h;

} // namespace

TEST_CASE("without a limit every start may go" * doctest::timeout(10)) {
  flow_gate gate;
  CHECK_FALSE(gate.limited());
  CHECK(gate.allowed(t0, 1000) == 1000);
  gate.started(t0, 1000);
  CHECK(gate.allowed(t0, 5) == 5);
  CHECK(gate.next_start(t0) == t0);
}

TEST_CASE("a paused gate lets nothing start until resumed" *
          doctest::timeout(10)) {
  flow_gate gate;
  gate.pause();
  CHECK(gate.limited());
  CHECK(gate.allowed(t0, 3) == 0);
  CHECK(gate.next_start(t0) == time_point::max());
  gate.resume();
  CHECK(gate.allowed(t0, 3) == 3);
}

TEST_CASE("a token comes back one period after it was spent" *
          doctest::timeout(10)) {
  flow_gate gate{start_rate{3, 1s}};
  CHECK(gate.allowed(t0, 10) == 3);
  gate.started(t0, 2);
  gate.started(t0 + 400ms, 1);
  CHECK(gate.allowed(t0 + 500ms, 1) == 0);
  CHECK(gate.next_start(t0 + 500ms) == t0 + 1s);
  // Two come back at t0 + 1 s, the third at t0 + 1.4 s.
  CHECK(gate.allowed(t0 + 1s, 10) == 2);
  gate.started(t0 + 1s, 2);
  CHECK(gate.next_start(t0 + 1s) == t0 + 1400ms);
  CHECK(gate.allowed(t0 + 1400ms, 10) == 1);
}

TEST_CASE("a reserved token counts until it is released or spent" *
          doctest::timeout(10)) {
  flow_gate gate{start_rate{2, 1s}};
  gate.reserve();
  gate.reserve();
  CHECK(gate.allowed(t0, 1) == 0);
  gate.release();
  gate.started(t0, 1);
  CHECK(gate.allowed(t0, 1) == 0);
  gate.release();
  CHECK(gate.allowed(t0, 5) == 1);
}

TEST_CASE("property: under random starts and reservations no window of one "
          "period sees more than the limit, and a blocked gate says when "
          "it opens" *
          doctest::timeout(30)) {
  std::mt19937_64 rng{20261124};
  for (int round = 0; round < 200; ++round) {
    auto limit = std::uniform_int_distribution<uint64_t>{1, 20}(rng);
    auto per = std::chrono::milliseconds(
        std::uniform_int_distribution<int>{1, 2000}(rng));
    flow_gate gate{start_rate{limit, per}};
    std::deque<time_point> log; // every start, checked at each one
    auto now = t0;
    size_t held = 0; // reserved tokens
    size_t batch = 0; // tokens of a batch handed out at `batch_from`
    auto batch_from = now;
    for (int step = 0; step < 500; ++step) {
      now += std::chrono::microseconds(std::uniform_int_distribution<int>{
          0, static_cast<int>(per.count() * 400)}(rng));
      auto want = std::uniform_int_distribution<size_t>{1, 6}(rng);
      switch (std::uniform_int_distribution<int>{0, 3}(rng)) {
        case 0: { // start at once
          auto n = gate.allowed(now, want);
          gate.started(now, n);
          for (size_t i = 0; i < n; ++i)
            log.push_back(now);
          break;
        }
        case 1: // reserve one for an entry on its way
          if (gate.allowed(now, 1) == 1) {
            gate.reserve();
            ++held;
          }
          break;
        case 2: // an entry arrives: its reservation is spent or released
          if (held > 0) {
            --held;
            gate.release();
            if (gate.allowed(now, 1) == 1 &&
                std::uniform_int_distribution<int>{0, 1}(rng) == 1) {
              gate.started(now, 1);
              log.push_back(now);
            }
          }
          break;
        case 3: // a batch: handed out now, its jobs start unseen until it
                // ends, at a later step
          if (batch == 0) {
            batch = gate.allowed(now, want);
            gate.hold(batch);
            batch_from = now;
          } else {
            std::uniform_int_distribution<int64_t> at{
                0, (now - batch_from).count()};
            for (size_t i = 0; i < batch; ++i)
              log.push_back(batch_from + caf::timespan{at(rng)});
            gate.settle(now, batch);
            batch = 0;
          }
          break;
      }
      // The check at every start: starts in (now - per, now].
      size_t in_window = 0;
      for (auto t : log)
        if (t + per > now)
          ++in_window;
      REQUIRE(in_window <= limit);
      if (gate.allowed(now, 1) == 0 && held == 0 && batch == 0) {
        auto next = gate.next_start(now);
        REQUIRE(next > now);
        auto probe = gate; // (asking about a later time forgets starts)
        REQUIRE(probe.allowed(next, 1) >= 1);
      }
    }
    // Batches log their starts afterwards: every window again, in order.
    std::sort(log.begin(), log.end());
    for (size_t i = 0; i + limit < log.size(); ++i)
      REQUIRE(log[i + limit] - log[i] >= per);
  }
}

TEST_CASE("a batch's tokens come back one period after the batch ended" *
          doctest::timeout(10)) {
  flow_gate gate{start_rate{4, 1s}};
  gate.hold(3);
  CHECK(gate.allowed(t0, 4) == 1);
  gate.settle(t0 + 300ms, 3); // its last job may have started just now
  CHECK(gate.allowed(t0 + 1200ms, 4) == 1);
  CHECK(gate.next_start(t0 + 1200ms) == t0 + 1200ms);
  gate.started(t0 + 1200ms, 1);
  CHECK(gate.next_start(t0 + 1200ms) == t0 + 1300ms);
  CHECK(gate.allowed(t0 + 1300ms, 4) == 3);
}

TEST_CASE("a bad limit names the field and says what to do" *
          doctest::timeout(10)) {
  auto err = start_rate{0, 1s}.validate();
  REQUIRE(err);
  CHECK(pool::is(err, pool::pool_errc::invalid_option));
  CHECK(pool::describe(err).find("rate_limit") != std::string::npos);
  CHECK(pool::describe(err).find("pause") != std::string::npos);
  CHECK(start_rate{1, 0s}.validate());
  CHECK(start_rate{1, -1s}.validate());
  CHECK(start_rate{start_rate::max_starts + 1, 1s}.validate());
  CHECK_FALSE(start_rate{start_rate::max_starts, 1s}.validate());
}
