#include "pool/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace pool {

histogram_data export_histogram(const log_histogram& x) {
  histogram_data result;
  auto& buckets = x.buckets();
  auto last = buckets.size();
  while (last > 0 && buckets[last - 1] == 0)
    --last;
  result.buckets.assign(buckets.begin(), buckets.begin() + last);
  result.count = x.count();
  result.sum = x.sum();
  result.max = x.max();
  return result;
}

uint64_t count_at_most(const histogram_data& x, uint64_t ns) {
  if (x.buckets.empty())
    return 0;
  auto last = std::min(log_histogram::bucket_of(ns), x.buckets.size() - 1);
  uint64_t result = 0;
  for (size_t i = 0; i <= last; ++i)
    result += x.buckets[i];
  return result;
}

caf::timespan window_quantile(const histogram_data& newer,
                              const histogram_data& older, double q) {
  auto at = [](const histogram_data& h, size_t i) {
    return i < h.buckets.size() ? h.buckets[i] : uint64_t{0};
  };
  // A restarted histogram (older counts more) is read from its start.
  auto base = older.count <= newer.count ? &older : nullptr;
  uint64_t total = 0;
  for (size_t i = 0; i < newer.buckets.size(); ++i) {
    auto before = base ? at(*base, i) : 0;
    total += at(newer, i) >= before ? at(newer, i) - before : 0;
  }
  if (total == 0)
    return caf::timespan{0};
  q = std::clamp(q, 0.0, 1.0);
  auto rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(total))));
  uint64_t seen = 0;
  for (size_t i = 0; i < newer.buckets.size(); ++i) {
    auto before = base ? at(*base, i) : 0;
    seen += at(newer, i) >= before ? at(newer, i) - before : 0;
    if (seen >= rank) {
      auto bound = std::min<uint64_t>(log_histogram::upper_bound(i),
                                      static_cast<uint64_t>(newer.max.count()));
      return caf::timespan{static_cast<caf::timespan::rep>(bound)};
    }
  }
  return newer.max;
}

} // namespace pool
