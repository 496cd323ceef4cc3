#pragma once

#include <cstdint>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

#include "pool/histogram.hpp"
#include "pool/stats.hpp"

namespace pool {

/// A `log_histogram`'s counters as a value that can be sent and compared:
/// what exporters need to give exact cumulative buckets and to compute
/// quantiles over a window (the difference of two snapshots).
struct histogram_data {
  /// One counter per `log_histogram` bucket, up to the last non-zero one.
  std::vector<uint64_t> buckets;
  uint64_t count = 0;
  caf::timespan sum{0};
  caf::timespan max{0};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, histogram_data& x) {
  return f(caf::meta::type_name("pool::histogram_data"), x.buckets, x.count,
           x.sum, x.max);
}

/// Copies the counters of `x`.
histogram_data export_histogram(const log_histogram& x);

/// Values recorded at or below `ns` nanoseconds. Exact when `ns + 1` starts
/// a bucket (every power of two does); otherwise counts the whole bucket
/// that holds `ns`.
uint64_t count_at_most(const histogram_data& x, uint64_t ns);

/// The quantile `q` in [0, 1] of the values recorded in `newer` but not yet
/// in `older` (an earlier snapshot of the same histogram), as the upper
/// bound of the bucket that holds it. Zero when nothing was recorded in
/// between. Pass an empty `older` for the whole history.
caf::timespan window_quantile(const histogram_data& newer,
                              const histogram_data& older, double q);

/// Everything an exporter shows of one pool, taken by the shepherd in one
/// message handler: reply to `(pool_metrics)`.
struct pool_metrics {
  pool_stats stats;
  /// From an attempt's due time to its dispatch to a worker.
  histogram_data queue_wait;
  /// From dispatch to the worker's status reply.
  histogram_data processing;
  /// How long the oldest operation that is due and waiting for a worker has
  /// been due; zero when none is waiting.
  caf::timespan oldest_due_age{0};
  /// The restart budget: restarts within the last `restart_window`, and the
  /// most allowed there (negative: no limit).
  uint64_t restarts_in_window = 0;
  int64_t max_restarts = 0;
  caf::timespan restart_window{0};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pool_metrics& x) {
  return f(caf::meta::type_name("pool::pool_metrics"), x.stats, x.queue_wait,
           x.processing, x.oldest_due_age, x.restarts_in_window,
           x.max_restarts, x.restart_window);
}

} // namespace pool
