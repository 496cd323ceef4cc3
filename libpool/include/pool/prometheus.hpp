#pragma once

#include <string>
#include <vector>

#include "pool/metrics.hpp"

namespace pool {

/// One pool as an exporter names it (the `pool` label).
struct named_metrics {
  std::string pool;
  pool_metrics metrics;
};

/// Renders the pools in Prometheus' text exposition format (version 0.0.4):
/// counters `pool_<what>_total`, gauges, and the queue-wait and processing
/// histograms as `pool_queue_wait_seconds` / `pool_processing_seconds`
/// with exact cumulative buckets at powers of two nanoseconds (1.024 µs to
/// 68.7 s) and `+Inf`. Every series carries `pool="<name>"`. Checked with
/// `promtool check metrics` in tests/http.cpp.
std::string prometheus_text(const std::vector<named_metrics>& pools);

/// Escapes a label value: backslash, double quote and newline.
std::string prometheus_label(const std::string& value);

} // namespace pool
