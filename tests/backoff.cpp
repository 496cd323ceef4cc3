// The retry delay: exponential with a cap, plus seeded jitter.
#include <doctest/doctest.h>

#include <chrono>

#include "pool/backoff.hpp"

using namespace std::chrono_literals;

TEST_CASE("without jitter, delays double up to the cap" *
          doctest::timeout(10)) {
  pool::backoff b{1s, 8s, 2.0, 0.0, 42};
  std::vector<caf::timespan> seen;
  for (uint32_t n = 1; n <= 6; ++n)
    seen.push_back(b.next(n));
  CHECK(seen == std::vector<caf::timespan>{1s, 2s, 4s, 8s, 8s, 8s});
}

TEST_CASE("a multiplier of 1 gives a constant delay" * doctest::timeout(10)) {
  pool::backoff b{250ms, 10s, 1.0, 0.0, 1};
  for (uint32_t n = 1; n <= 4; ++n)
    CHECK(b.next(n) == caf::timespan{250ms});
}

TEST_CASE("jitter stays within its fraction and repeats under a fixed seed" *
          doctest::timeout(10)) {
  pool::backoff a{1s, 60s, 2.0, 0.5, 7};
  pool::backoff b{1s, 60s, 2.0, 0.5, 7};
  pool::backoff c{1s, 60s, 2.0, 0.5, 8};
  bool differs = false;
  for (uint32_t n = 1; n <= 5; ++n) {
    auto base = caf::timespan{std::chrono::seconds(1 << (n - 1))};
    auto x = a.next(n);
    CHECK(x == b.next(n));
    differs = differs || x != c.next(n);
    CHECK(x >= base);
    CHECK(x < base + base / 2);
  }
  CHECK(differs);
}

TEST_CASE("huge attempt numbers saturate at the cap" * doctest::timeout(10)) {
  pool::backoff b{1s, 30s, 2.0, 0.0, 3};
  CHECK(b.next(5000) == caf::timespan{30s});
}
