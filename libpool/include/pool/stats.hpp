#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>
#include <caf/timespan.hpp>

#include "pool/histogram.hpp"

namespace pool {

/// What the queue reports about its entries, at one instant.
struct queue_counts {
  /// Entries due now.
  uint64_t available = 0;
  /// Entries not yet due.
  uint64_t delayed = 0;
  /// Time until the earliest delayed entry is due; `caf::timespan::max()`
  /// when there is none.
  caf::timespan next_due_in = caf::timespan::max();
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, queue_counts& x) {
  return f(caf::meta::type_name("pool::queue_counts"), x.available, x.delayed,
           x.next_due_in);
}

/// A consistent snapshot of a pool, taken by the shepherd in one message
/// handler. Worker figures always satisfy
/// `busy + waiting + sleeping == workers`.
struct pool_stats {
  /// Local workers the pool is configured with.
  uint64_t configured = 0;
  /// Workers currently part of the pool (configured plus joined ones).
  uint64_t workers = 0;
  /// Workers holding work: one attempt, or a batch of them.
  uint64_t busy = 0;
  /// Highest `busy` so far.
  uint64_t busy_high = 0;
  /// Workers asking for work or woken and about to ask.
  uint64_t waiting = 0;
  /// Workers told to sleep until the shepherd wakes them.
  uint64_t sleeping = 0;
  /// Of `workers`, how many joined through the protocol (e.g. remote).
  uint64_t joined = 0;
  /// Queue entries due now.
  uint64_t available = 0;
  /// Highest `available` reported by the queue so far.
  uint64_t available_high = 0;
  /// Queue entries not yet due.
  uint64_t delayed = 0;
  /// Submits taken in so far: accepted, or parked until there is room, or
  /// waiting for their unique key's lookup (rejected ones are not counted).
  /// At every snapshot, `available + delayed + held + parked == submitted +
  /// adopted - completed - failed - cancelled - deduplicated - released`.
  uint64_t submitted = 0;
  /// Operations of other shepherds of a shared queue (PostgreSQL) that
  /// this pool took from the queue to run.
  uint64_t adopted = 0;
  /// Attempts whose lease this pool lost (a shared queue): another shepherd
  /// took them back as expired and runs them again; their outcomes here are
  /// fenced.
  uint64_t leases_lost = 0;
  /// Of those, adopted operations this pool let go (no caller here waits).
  uint64_t released = 0;
  /// Unique submits that waited (parked, or for a lookup) and then got the
  /// id of an existing operation instead of becoming one.
  uint64_t deduplicated = 0;
  /// Operations held by workers: running, or later in a worker's batch.
  uint64_t held = 0;
  /// Joined workers dropped for staying silent after they were woken.
  uint64_t workers_dropped = 0;
  /// Jobs on cooperative workers that ran longer than the slow-job
  /// threshold (`pool_options::slow_job_warning`).
  uint64_t slow_jobs = 0;
  /// Operations whose caller received a result.
  uint64_t completed = 0;
  /// Operations whose caller received a final error.
  uint64_t failed = 0;
  /// Submits refused because the queue was at its capacity.
  uint64_t rejected = 0;
  /// Submits waiting for room in a full queue (`wait_when_full`), or for
  /// a durable store's answer about their unique key.
  uint64_t parked = 0;
  /// Operations cancelled by id.
  uint64_t cancelled = 0;
  /// Attempts that failed and were enqueued again.
  uint64_t retried = 0;
  /// Attempts whose job snoozed its operation (`pool::snooze_job`).
  uint64_t snoozed = 0;
  /// Attempts that ran past `attempt_timeout`.
  uint64_t timed_out = 0;
  /// Status replies dropped because their attempt was no longer awaited.
  uint64_t stale_replies = 0;
  /// Local workers respawned (after dying or timing out).
  uint64_t worker_restarts = 0;
  /// Queue actors respawned over the same store.
  uint64_t queue_restarts = 0;
  /// Workers replaced after a timeout that have not terminated yet (a
  /// dedicated worker stuck in user code keeps its thread until it returns).
  uint64_t abandoned = 0;
  /// Whether the backlog alarm is raised now (see `backlog_alarm`).
  bool backlog_alarm = false;
  /// Whether the pool is paused now (`pause`): no attempt starts until
  /// `resume`.
  bool paused = false;
  /// The operations the caller said it expects in all (`exp_total`); 0
  /// when it said nothing. Progress is `completed + failed + cancelled` of
  /// it.
  uint64_t expected_total = 0;
  /// Operations in the dead set now: failed for good and kept for an
  /// operator's retry or discard (`pool_options::dead_set`; the jobs
  /// view's state `failed`). Cancelled and stopped ones kept beside them
  /// are not counted.
  uint64_t dead = 0;
  /// Times the backlog alarm was raised.
  uint64_t alarms_raised = 0;
  /// Overload warnings logged (at most one per overload interval).
  uint64_t overload_warnings = 0;
  /// Highest number of operations waiting for a worker (queued, delayed or
  /// parked; not running).
  uint64_t waiting_high = 0;
  /// Batches of more than one job handed to a worker in one `work_to_do`
  /// (see `pool_options::max_batch`).
  uint64_t batches = 0;
  /// Jobs handed out in those batches.
  uint64_t batched = 0;
  /// Batches sent ahead to busy workers (docs/protocol.md "Lookahead").
  uint64_t sent_ahead = 0;
  /// Of those, batches taken back before their worker started them: given
  /// to a worker that asked while nothing else was ready, or kept on pause
  /// or after one of their operations ended.
  uint64_t taken_back = 0;
  /// From an attempt's due time to its dispatch to a worker.
  latency_summary queue_wait;
  /// From dispatch to the worker's status reply.
  latency_summary processing;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pool_stats& x) {
  return f(caf::meta::type_name("pool::pool_stats"), x.configured, x.workers,
           x.busy, x.busy_high, x.waiting, x.sleeping, x.joined, x.available,
           x.available_high, x.delayed, x.submitted, x.completed, x.failed,
           x.rejected, x.parked, x.cancelled, x.retried, x.snoozed,
           x.timed_out, x.stale_replies, x.worker_restarts, x.queue_restarts, x.abandoned,
           x.backlog_alarm, x.alarms_raised, x.overload_warnings,
           x.waiting_high, x.batches, x.batched, x.queue_wait, x.processing,
           x.deduplicated, x.held, x.workers_dropped, x.slow_jobs, x.adopted,
           x.leases_lost, x.released, x.sent_ahead, x.taken_back, x.paused,
           x.expected_total, x.dead);
}

/// Every figure on one line, `key=value` pairs (about 1,000 characters),
/// for logs and machines.
std::string to_string(const pool_stats& x);

/// The main figures in one terminal line, for people:
/// `3/4 busy, 120 queued (+5 delayed), 10234 done, 2 failed, run p99 35.1ms`;
/// retries, restarts, timeouts, rejections, joined workers and a raised
/// backlog alarm are added only when there are any.
std::string summary(const pool_stats& x);

} // namespace pool
