#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

namespace pool {

/// A duration distribution in logarithmic buckets: exact below 16 ns, then
/// 8 buckets per power of two (at most 12.5 % relative error). Fixed size
/// (496 counters), so memory stays bounded however many values it sees; no
/// per-value storage. Not thread-safe; owned by one actor.
class log_histogram {
public:
  static constexpr size_t bucket_count = 496;

  /// Records one duration; negative ones count as zero.
  void record(caf::timespan x) noexcept;

  /// Records `n` values of `x` (the jobs of a batch, each its share).
  void record(caf::timespan x, uint64_t n) noexcept;

  /// Number of recorded values.
  uint64_t count() const noexcept {
    return count_;
  }

  /// Sum of the recorded values (exact, in nanoseconds).
  caf::timespan sum() const noexcept {
    return caf::timespan{static_cast<caf::timespan::rep>(sum_)};
  }

  /// The counters, one per bucket (see `bucket_of`).
  const std::array<uint64_t, bucket_count>& buckets() const noexcept {
    return buckets_;
  }

  /// Largest recorded value (exact).
  caf::timespan max() const noexcept {
    return caf::timespan{static_cast<caf::timespan::rep>(max_)};
  }

  /// The value at quantile `q` in [0, 1]: the upper bound of the bucket that
  /// holds it, never above `max()`. Zero when empty.
  caf::timespan quantile(double q) const noexcept;

  /// Index of the bucket holding `ns` nanoseconds.
  static size_t bucket_of(uint64_t ns) noexcept;

  /// Largest value that falls into bucket `index`.
  static uint64_t upper_bound(size_t index) noexcept;

private:
  std::array<uint64_t, bucket_count> buckets_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

/// What a histogram says, in the figures operators read.
struct latency_summary {
  uint64_t count = 0;
  caf::timespan p50{0};
  caf::timespan p90{0};
  caf::timespan p99{0};
  caf::timespan max{0};
};

/// Summarizes `x` as count, p50, p90, p99 and max.
latency_summary summarize(const log_histogram& x);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, latency_summary& x) {
  return f(caf::meta::type_name("pool::latency_summary"), x.count, x.p50, x.p90,
           x.p99, x.max);
}

/// Renders as `n=<count> p50=<ms> p90=<ms> p99=<ms> max=<ms>`.
std::string to_string(const latency_summary& x);

} // namespace pool
