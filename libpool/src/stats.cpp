#include "pool/stats.hpp"

#include <fmt/format.h>

namespace pool {

std::string to_string(const pool_stats& x) {
  return fmt::format(
      "configured={} workers={} busy={} waiting={} sleeping={} "
      "joined={} available={} delayed={} submitted={} "
      "completed={} failed={} cancelled={} retried={} timed_out={} "
      "stale_replies={} worker_restarts={} queue_restarts={} "
      "abandoned={}",
      x.configured, x.workers, x.busy, x.waiting, x.sleeping, x.joined,
      x.available, x.delayed, x.submitted, x.completed, x.failed, x.cancelled,
      x.retried, x.timed_out, x.stale_replies, x.worker_restarts,
      x.queue_restarts, x.abandoned);
}

} // namespace pool
