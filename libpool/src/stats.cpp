#include "pool/stats.hpp"

#include <fmt/format.h>

namespace pool {

std::string to_string(const pool_stats& x) {
  return fmt::format(
      "configured={} workers={} busy={} busy_high={} waiting={} "
      "sleeping={} joined={} available={} available_high={} delayed={} "
      "submitted={} "
      "completed={} failed={} rejected={} parked={} cancelled={} retried={} "
      "timed_out={} "
      "stale_replies={} worker_restarts={} queue_restarts={} "
      "abandoned={} backlog_alarm={} alarms_raised={} overload_warnings={} "
      "waiting_high={} direct_handouts={} batches={} batched={} handed_ahead={} taken_ahead={} queue_wait=[{}] processing=[{}]",
      x.configured, x.workers, x.busy, x.busy_high, x.waiting, x.sleeping,
      x.joined, x.available, x.available_high, x.delayed, x.submitted,
      x.completed, x.failed, x.rejected, x.parked, x.cancelled, x.retried,
      x.timed_out, x.stale_replies, x.worker_restarts, x.queue_restarts,
      x.abandoned, x.backlog_alarm, x.alarms_raised, x.overload_warnings,
      x.waiting_high, x.direct_handouts, x.batches, x.batched, x.handed_ahead, x.taken_ahead,
      to_string(x.queue_wait),
      to_string(x.processing));
}

} // namespace pool
