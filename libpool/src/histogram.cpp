#include "pool/histogram.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace pool {

size_t log_histogram::bucket_of(uint64_t ns) noexcept {
  if (ns < 16)
    return static_cast<size_t>(ns);
  auto exponent = 63 - __builtin_clzll(ns); // >= 4
  auto sub = (ns >> (exponent - 3)) & 7;
  return 16 + static_cast<size_t>(exponent - 4) * 8 + sub;
}

uint64_t log_histogram::upper_bound(size_t index) noexcept {
  if (index < 16)
    return index;
  auto exponent = (index - 16) / 8 + 4;
  auto sub = (index - 16) % 8;
  auto lower = (8 + sub) << (exponent - 3);
  return lower + (uint64_t{1} << (exponent - 3)) - 1;
}

void log_histogram::record(caf::timespan x) noexcept {
  auto ns = x.count() > 0 ? static_cast<uint64_t>(x.count()) : uint64_t{0};
  ++buckets_[bucket_of(ns)];
  ++count_;
  sum_ += ns;
  max_ = std::max(max_, ns);
}

void log_histogram::record(caf::timespan x, uint64_t n) noexcept {
  if (n == 0)
    return;
  auto ns = x.count() > 0 ? static_cast<uint64_t>(x.count()) : uint64_t{0};
  buckets_[bucket_of(ns)] += n;
  count_ += n;
  sum_ += ns * n;
  max_ = std::max(max_, ns);
}

caf::timespan log_histogram::quantile(double q) const noexcept {
  if (count_ == 0)
    return caf::timespan{0};
  q = std::clamp(q, 0.0, 1.0);
  auto rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < bucket_count; ++i) {
    seen += buckets_[i];
    if (seen >= rank)
      return caf::timespan{
          static_cast<caf::timespan::rep>(std::min(upper_bound(i), max_))};
  }
  return max();
}

latency_summary summarize(const log_histogram& x) {
  return latency_summary{x.count(), x.quantile(0.5), x.quantile(0.9),
                         x.quantile(0.99), x.max()};
}

std::string to_string(const latency_summary& x) {
  auto ms = [](caf::timespan d) {
    return static_cast<double>(d.count()) / 1e6;
  };
  return fmt::format("n={} p50={:.3f}ms p90={:.3f}ms p99={:.3f}ms max={:.3f}ms",
                     x.count, ms(x.p50), ms(x.p90), ms(x.p99), ms(x.max));
}

} // namespace pool
