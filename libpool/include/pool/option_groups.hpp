#pragma once

// The concerns a pool is configured by, one plain value each with its own
// validation (`pool_options` holds one of each and keeps the chained
// setters). Each `validate()` returns `pool_errc::invalid_option` naming the
// first bad field, or none.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include "pool/dispatch_tuning.hpp"
#include "pool/flow_gate.hpp"
#include "pool/log.hpp"
#include "pool/pg_options.hpp"
#include "pool/store_factory.hpp"

namespace pool {

/// How a pool's workers are scheduled.
enum class worker_kind {
  /// Workers run on CAF's scheduler threads. Jobs must not block.
  cooperative,
  /// Each worker runs on a thread of its own (`caf::detached`). For jobs
  /// that block (a database call) or burn CPU for long stretches.
  dedicated,
};

/// Returns `"cooperative"` or `"dedicated"`.
std::string to_string(worker_kind x);

/// How hard a `sqlite_store` waits for the disk at each commit.
enum class sqlite_sync {
  /// `PRAGMA synchronous = FULL`: a committed change survives a process
  /// crash and a power loss. The default.
  full,
  /// `PRAGMA synchronous = NORMAL`: a committed change survives a process
  /// crash, not a power loss. Faster: the WAL is synced at checkpoints only.
  normal,
};

/// Returns `"full"` or `"normal"`.
std::string to_string(sqlite_sync x);

/// The most workers a pool may have: a bound on resize requests and options,
/// against typos that would spawn without end. Each worker is an actor
/// (about 1 KiB); a million of them is what one shepherd still resizes
/// within a second per 2,000 spawns or stops.
constexpr size_t max_pool_workers = 1'000'000;

/// The largest `max_batch` a pool accepts.
constexpr size_t max_batch_limit = 4096;

/// Returns `cores - 1`, at least 1: the default number of dedicated workers,
/// leaving one core for the shepherd and the rest of the application.
size_t default_dedicated_workers();

/// Sizing: how many workers, of which kind, and autoscaling.
struct sizing_options {
  struct autoscale_limits {
    size_t min;
    size_t max;
    caf::timespan grow_after;
    caf::timespan shrink_after;
  };
  size_t workers = 4;
  /// Whether `workers` was set (else it follows `kind` and `autoscale`).
  bool workers_set = false;
  worker_kind kind = worker_kind::cooperative;
  std::optional<autoscale_limits> autoscale;

  /// The number of workers to start with.
  size_t initial_workers() const noexcept;

  caf::error validate() const;
};

/// The dead set: operations that failed for good, kept with their inputs
/// and attempt histories for an operator to retry or discard (the jobs
/// view's `failed` state, docs/operations.md "The dead set"). In memory for
/// the memory store; SQLite and PostgreSQL keep them in the store and a
/// restarted pool lists them again.
struct dead_set_options {
  /// At most this many (the oldest failure goes first); 0: none kept.
  size_t max_jobs = 10'000;
  /// None that failed longer ago than this; 0: none kept.
  caf::timespan max_age = std::chrono::hours(24 * 7);

  caf::error validate() const;
};

/// The most jobs a dead set may keep: a bound against typos (each keeps
/// its input and history in the shepherd's memory).
constexpr size_t max_dead_jobs = 10'000'000;

/// Retries: attempts, backoff with jitter, and the attempt timeout; what
/// is kept of an operation that failed for good.
struct retry_options {
  uint32_t max_attempts = 1;
  caf::timespan backoff_initial = std::chrono::milliseconds(100);
  caf::timespan backoff_max = std::chrono::seconds(30);
  double backoff_multiplier = 2.0;
  double jitter = 0.2;
  std::optional<uint64_t> seed;
  std::optional<caf::timespan> attempt_timeout;
  dead_set_options dead_set;

  caf::error validate() const;
};

/// Supervision: the restart intensity, and orphans.
struct supervision_options {
  int64_t max_restarts = 10;
  caf::timespan restart_window = std::chrono::seconds(10);
  bool skip_orphaned = false;

  caf::error validate() const;
};

/// Admission: the capacity of the queue and the submits that may wait.
struct admission_options {
  std::optional<size_t> capacity;
  size_t max_parked = 0;
  /// Most attempts started per period (`flow_gate`); none: no limit.
  std::optional<start_rate> rate_limit;

  caf::error validate() const;
};

/// Monitoring: the name in logs, the log hook, the overload warning and the
/// backlog alarm.
struct monitoring_options {
  std::string name = "pool";
  log_hook log;
  std::optional<size_t> overload_threshold;
  caf::timespan overload_interval = std::chrono::seconds(60);
  caf::timespan overload_sustain = std::chrono::seconds(5);
  std::optional<caf::timespan> backlog_alarm;
  /// A job on a cooperative worker that runs longer than this is logged
  /// (it kept a scheduler thread from every other actor); 0: never.
  caf::timespan slow_job = std::chrono::milliseconds(100);

  caf::error validate() const;
};

/// Durability: the SQLite file and how it commits.
struct durability_options {
  std::optional<std::string> path;
  sqlite_sync sync = sqlite_sync::full;
  caf::timespan commit_interval = std::chrono::milliseconds(1);
  caf::timespan unique_window{0};
  /// Finished operations older than this are pruned; none: kept forever.
  std::optional<caf::timespan> retention;
  /// The PostgreSQL server of a shared queue (a conninfo), and how the
  /// pool uses it; none: not in PostgreSQL.
  std::optional<std::string> postgres;
  pg_options pg;
  /// The program's own store; empty: the one the fields above name.
  store_factory store;

  caf::error validate() const;
};

/// Validates a dispatch tuning (`max_batch`, `batch_time`).
caf::error validate(const dispatch_tuning& x);

} // namespace pool
