// The log-bucket histogram behind the pool's latency figures.
#include <doctest/doctest.h>

#include <chrono>

#include "pool/histogram.hpp"

using namespace std::chrono_literals;
using pool::log_histogram;

TEST_CASE("values below 16 ns are exact" * doctest::timeout(10)) {
  for (uint64_t v = 0; v < 16; ++v)
    CHECK(log_histogram::upper_bound(log_histogram::bucket_of(v)) == v);
}

TEST_CASE("every value lands in a bucket at most 12.5% wide" *
          doctest::timeout(10)) {
  for (uint64_t v = 16; v < (uint64_t{1} << 62); v = v * 3 / 2 + 7) {
    auto i = log_histogram::bucket_of(v);
    REQUIRE(i < log_histogram::bucket_count);
    auto hi = log_histogram::upper_bound(i);
    CHECK(hi >= v);
    CHECK(static_cast<double>(hi - v) <= 0.125 * static_cast<double>(v));
    if (i > 0)
      CHECK(log_histogram::upper_bound(i - 1) < v);
  }
  CHECK(log_histogram::bucket_of(UINT64_MAX) < log_histogram::bucket_count);
}

TEST_CASE("quantiles of 1..1000 us are within a bucket of the truth" *
          doctest::timeout(10)) {
  log_histogram h;
  for (int i = 1; i <= 1000; ++i)
    h.record(std::chrono::microseconds(i));
  CHECK(h.count() == 1000);
  CHECK(h.max() == caf::timespan{1000us});
  auto near = [](caf::timespan got, caf::timespan want) {
    return got >= want && got <= want + want / 8;
  };
  CHECK(near(h.quantile(0.5), 500us));
  CHECK(near(h.quantile(0.9), 900us));
  CHECK(near(h.quantile(0.99), 990us));
  CHECK(h.quantile(1.0) == caf::timespan{1000us});
}

TEST_CASE("memory stays bounded however many values are recorded" *
          doctest::timeout(10)) {
  log_histogram h;
  auto size_before = sizeof(h);
  for (int i = 0; i < 100000; ++i)
    h.record(std::chrono::nanoseconds(i * 7919));
  CHECK(sizeof(h) == size_before);
  CHECK(h.count() == 100000);
  CHECK(log_histogram{}.quantile(0.5) == caf::timespan{0});
}

TEST_CASE("summarize: an empty histogram is all zeros" * doctest::timeout(10)) {
  auto x = pool::summarize(log_histogram{});
  CHECK(x.count == 0);
  CHECK(x.p99 == caf::timespan{0});
  CHECK(pool::to_string(x) == "n=0 p50=0.000ms p90=0.000ms p99=0.000ms "
                              "max=0.000ms");
}
