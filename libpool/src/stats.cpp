#include "pool/stats.hpp"

#include <fmt/format.h>

#include "pool/duration_text.hpp"

namespace pool {

std::string to_string(const pool_stats& x) {
  return fmt::format(
      "configured={} workers={} busy={} busy_high={} waiting={} "
      "sleeping={} joined={} available={} available_high={} delayed={} "
      "submitted={} "
      "completed={} failed={} rejected={} parked={} cancelled={} retried={} "
      "snoozed={} timed_out={} "
      "stale_replies={} worker_restarts={} queue_restarts={} "
      "abandoned={} backlog_alarm={} paused={} expected_total={} dead={} "
      "alarms_raised={} "
      "overload_warnings={} "
      "waiting_high={} batches={} batched={} sent_ahead={} taken_back={} adopted={} leases_lost={} released={} "
      "queue_wait=[{}] processing=[{}]",
      x.configured, x.workers, x.busy, x.busy_high, x.waiting, x.sleeping,
      x.joined, x.available, x.available_high, x.delayed, x.submitted,
      x.completed, x.failed, x.rejected, x.parked, x.cancelled, x.retried,
      x.snoozed, x.timed_out, x.stale_replies, x.worker_restarts, x.queue_restarts,
      x.abandoned, x.backlog_alarm, x.paused, x.expected_total, x.dead, x.alarms_raised,
      x.overload_warnings,
      x.waiting_high, x.batches, x.batched,
      x.sent_ahead, x.taken_back, x.adopted, x.leases_lost, x.released, to_string(x.queue_wait),
      to_string(x.processing));
}

std::string summary(const pool_stats& x) {
  auto line = fmt::format("{}/{} busy", x.busy, x.workers);
  if (x.joined > 0)
    line += fmt::format(" ({} joined)", x.joined);
  line += fmt::format(", {} queued", x.available);
  if (x.delayed > 0)
    line += fmt::format(" (+{} delayed)", x.delayed);
  line += fmt::format(", {} done, {} failed", x.completed, x.failed);
  if (x.expected_total > 0)
    line += fmt::format(" (of {} expected)", x.expected_total);
  auto extra = [&line](uint64_t n, const char* what) {
    if (n > 0)
      line += fmt::format(", {} {}", n, what);
  };
  extra(x.retried, "retried");
  extra(x.snoozed, "snoozed");
  extra(x.timed_out, "timed out");
  extra(x.worker_restarts + x.queue_restarts, "restarts");
  extra(x.rejected, "rejected");
  extra(x.dead, "in the dead set");
  if (x.processing.count > 0)
    line += ", run p99 " + short_duration(x.processing.p99);
  if (x.backlog_alarm)
    line += ", BACKLOG ALARM";
  if (x.paused)
    line += ", PAUSED";
  return line;
}

} // namespace pool
