#include "pool/stats.hpp"

#include <fmt/format.h>

namespace pool {

std::string to_string(const pool_stats& x) {
  return fmt::format("configured={} workers={} busy={} waiting={} sleeping={} "
                     "joined={} available={} delayed={} submitted={} "
                     "completed={} failed={}",
                     x.configured, x.workers, x.busy, x.waiting, x.sleeping,
                     x.joined, x.available, x.delayed, x.submitted,
                     x.completed, x.failed);
}

} // namespace pool
