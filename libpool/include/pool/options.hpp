#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <caf/timespan.hpp>

#include <caf/error.hpp>

#include "pool/log.hpp"

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
  /// crash, not a power loss (the last commits may roll back then).
  /// Faster: the WAL is synced at checkpoints only.
  normal,
};

/// Returns `"full"` or `"normal"`.
std::string to_string(sqlite_sync x);

/// The most workers a pool may have (a bound on resize requests and
/// options, against typos that would spawn without end).
constexpr size_t max_pool_workers = 1'000'000;

/// The largest `max_batch` a pool accepts.
constexpr size_t max_batch_limit = 4096;

/// Returns `cores - 1`, at least 1: the default number of dedicated workers,
/// leaving one core for the shepherd and the rest of the application.
size_t default_dedicated_workers();

/// Everything a pool is configured with, as one value with chained setters.
/// Setters never fail; `validate()` names the first bad field. Plain value:
/// copy it freely, from any thread.
class pool_options {
public:
  /// Number of workers (resource instances). Default: 4 for cooperative
  /// pools; `default_dedicated_workers()` when `kind(dedicated)` is chosen
  /// and no count was set; the autoscale minimum with `autoscale`.
  pool_options& workers(size_t n) {
    workers_ = n;
    workers_set_ = true;
    return *this;
  }

  size_t workers() const noexcept;

  /// Cooperative (default) or dedicated workers.
  pool_options& kind(worker_kind x) {
    kind_ = x;
    return *this;
  }

  worker_kind kind() const noexcept {
    return kind_;
  }

  /// Whether the shepherd takes the short cuts docs/protocol.md describes
  /// for the pool's own workers: ask the queue for a sleeping worker
  /// instead of waking it to ask, hand a submit straight to a sleeping
  /// worker when nothing else is due (non-durable stores), tell a worker
  /// asking while nothing is due to sleep without asking the queue
  /// (non-durable stores), and take due entries out ahead while every
  /// worker is busy. Default: yes. Without them, every
  /// worker goes through the pattern's plain sequence (wake_up, give_work,
  /// get_work, work_to_do), as joined workers always do.
  pool_options& short_cuts(bool x) {
    short_cuts_ = x;
    return *this;
  }

  bool short_cuts() const noexcept {
    return short_cuts_;
  }

  /// Whether the shepherd hands the next due entry ahead to busy local
  /// workers, so that the first of them whose job ends starts it at once
  /// instead of waiting for the shepherd to answer its report
  /// (docs/protocol.md "Hand-ahead"). One entry at a time, under one ticket:
  /// a worker that asks while no recipient has taken it gets it instead, so
  /// no entry waits behind a long job. Only while jobs go one at a time,
  /// and only with `short_cuts` (entries are taken out ahead). Default:
  /// yes.
  pool_options& hand_ahead(bool x) {
    hand_ahead_ = x;
    return *this;
  }

  bool hand_ahead() const noexcept {
    return hand_ahead_;
  }

  /// Most jobs handed to one of the pool's own workers in one
  /// `work_to_do` (adaptive batching, docs/protocol.md "Batches"). The
  /// shepherd batches only while more entries are due than there are
  /// workers, and sizes a batch so that its jobs are expected to take
  /// about `batch_time`, judged by the processing times it observed; jobs
  /// longer than half of `batch_time` go one at a time, so an uneven job
  /// never holds up others. With an `attempt_timeout`, each attempt of a
  /// batch reports as it finishes and is timed on its own. 1 turns
  /// batching off. Default: 16.
  pool_options& max_batch(size_t n) {
    max_batch_ = n;
    return *this;
  }

  size_t max_batch() const noexcept {
    return max_batch_;
  }

  /// How long the jobs of one batch are expected to take together, at
  /// most (see `max_batch`). Default: 100 us.
  pool_options& batch_time(caf::timespan x) {
    batch_time_ = x;
    return *this;
  }

  caf::timespan batch_time() const noexcept {
    return batch_time_;
  }

  /// Whether the shepherd and the queue each run on a thread of their own
  /// (CAF's `detached`) instead of on CAF's scheduler. Default: no. With
  /// CAF's own scheduler settings, idle scheduler threads sleep between
  /// polls, and a message from a dedicated worker (outside the scheduler)
  /// to a scheduled shepherd waits for the next poll (~100 us here); then
  /// threads of their own help. `pool::configure` turns that polling off,
  /// after which a scheduled shepherd answers faster (docs/benchmarks.md,
  /// "What each change was worth").
  pool_options& dedicated_control(bool x) {
    dedicated_control_ = x;
    return *this;
  }

  bool dedicated_control() const noexcept {
    return dedicated_control_;
  }

  /// A name used in log lines and stats; default `"pool"`.
  pool_options& name(std::string x) {
    name_ = std::move(x);
    return *this;
  }

  const std::string& name() const noexcept {
    return name_;
  }

  /// Attempts per operation, including the first; 1 means no retry.
  /// Default 1.
  pool_options& max_attempts(uint32_t n) {
    max_attempts_ = n;
    return *this;
  }

  uint32_t max_attempts() const noexcept {
    return max_attempts_;
  }

  /// Delay before a retry: `initial * multiplier^(n-1)` after the n-th
  /// failure, capped at `max`. Default 100 ms, 30 s, 2.0.
  pool_options& backoff(caf::timespan initial, caf::timespan max,
                        double multiplier = 2.0) {
    backoff_initial_ = initial;
    backoff_max_ = max;
    backoff_multiplier_ = multiplier;
    return *this;
  }

  caf::timespan backoff_initial() const noexcept {
    return backoff_initial_;
  }

  caf::timespan backoff_max() const noexcept {
    return backoff_max_;
  }

  double backoff_multiplier() const noexcept {
    return backoff_multiplier_;
  }

  /// Random extra delay, as a fraction of the backoff delay, in [0, 1].
  /// Default 0.2.
  pool_options& jitter(double fraction) {
    jitter_ = fraction;
    return *this;
  }

  double jitter() const noexcept {
    return jitter_;
  }

  /// Seed of the jitter generator; fix it for reproducible delays.
  /// Default: drawn from std::random_device at spawn.
  pool_options& seed(uint64_t x) {
    seed_ = x;
    return *this;
  }

  std::optional<uint64_t> seed() const noexcept {
    return seed_;
  }

  /// Longest an attempt may run. When it passes, the attempt fails (the
  /// retry policy applies) and its worker is replaced. Default: no limit.
  pool_options& attempt_timeout(caf::timespan x) {
    attempt_timeout_ = x;
    return *this;
  }

  std::optional<caf::timespan> attempt_timeout() const noexcept {
    return attempt_timeout_;
  }

  /// Restart intensity as in OTP supervisors: more than `max_restarts`
  /// restarts (of workers or the queue) within `window` make the shepherd
  /// give up and exit with `pool_errc::restart_intensity`. Default 10 in
  /// 10 s.
  pool_options& restart_intensity(int64_t max_restarts, caf::timespan window) {
    max_restarts_ = max_restarts;
    restart_window_ = window;
    return *this;
  }

  int64_t max_restarts() const noexcept {
    return max_restarts_;
  }

  caf::timespan restart_window() const noexcept {
    return restart_window_;
  }

  /// When set, an operation whose calling actor has terminated is not
  /// started (it ends as `cancelled`). Costs a monitor per distinct caller
  /// with pending operations. Default: off.
  pool_options& skip_orphaned(bool x) {
    skip_orphaned_ = x;
    return *this;
  }

  bool skip_orphaned() const noexcept {
    return skip_orphaned_;
  }

  /// Bounds the operations waiting for a worker (queued or delayed, not
  /// counting those running). When full, a submit is rejected at once with
  /// `pool_errc::overloaded`, or, after `wait_when_full(n)`, answered only
  /// once there is room, with at most `n` submits waiting (beyond: rejected).
  /// Default: unbounded.
  pool_options& capacity(size_t n) {
    capacity_ = n;
    return *this;
  }

  std::optional<size_t> capacity() const noexcept {
    return capacity_;
  }

  /// With a capacity: park up to `max_waiting` submits until there is room
  /// instead of rejecting them. Default: reject (0 parked).
  pool_options& wait_when_full(size_t max_waiting) {
    max_parked_ = max_waiting;
    return *this;
  }

  size_t max_parked() const noexcept {
    return max_parked_;
  }

  /// Logs a warning when more than `threshold` operations wait for a
  /// worker (queued or delayed, not running), at most once per `interval`;
  /// subscribers also get an `overload` event. Default: 100 × workers, 60 s.
  pool_options& overload_warning(size_t threshold, caf::timespan interval) {
    overload_threshold_ = threshold;
    overload_interval_ = interval;
    return *this;
  }

  /// Sets only the least time between two overload warnings.
  pool_options& overload_interval(caf::timespan interval) {
    overload_interval_ = interval;
    return *this;
  }

  /// The explicit threshold, if one was set (else 100 × workers applies).
  std::optional<size_t> overload_threshold() const noexcept {
    return overload_threshold_;
  }

  caf::timespan overload_interval() const noexcept {
    return overload_interval_;
  }

  /// Raises the backlog alarm when the operations available now stay above
  /// the number of workers for longer than `after`; it clears once they
  /// drop below. Raising and clearing are logged and sent as events.
  /// Default: off.
  pool_options& backlog_alarm(caf::timespan after) {
    backlog_alarm_ = after;
    return *this;
  }

  std::optional<caf::timespan> backlog_alarm() const noexcept {
    return backlog_alarm_;
  }

  /// Autoscaling limits, when enabled.
  struct autoscale_limits {
    size_t min;
    size_t max;
    caf::timespan grow_after;
    caf::timespan shrink_after;
  };

  /// Autoscaling between `min` and `max` local workers: when the backlog
  /// condition (available > workers) persists for `grow_after`, the pool
  /// grows (doubling, at most to the backlog and to `max`); a worker that
  /// sleeps for `shrink_after` stops, down to `min`. `workers()` is the
  /// starting size and must lie within [min, max]. Default: off.
  pool_options& autoscale(size_t min, size_t max, caf::timespan grow_after,
                          caf::timespan shrink_after) {
    autoscale_ = autoscale_limits{min, max, grow_after, shrink_after};
    return *this;
  }

  const std::optional<autoscale_limits>& autoscale() const noexcept {
    return autoscale_;
  }

  /// Keeps the queue in an SQLite file at `path` (`pool::sqlite_store`):
  /// accepted work survives a crash of the process and is run again by the
  /// next pool over the same file (at-least-once); outcomes are recorded
  /// for `op_status`. `sync` is `full` (survives a power loss) or `normal`
  /// (survives a process crash, not a power loss). Payload types must be
  /// serializable by CAF and known to the actor system. Default: in memory.
  pool_options& durable(std::string path,
                        sqlite_sync sync = sqlite_sync::full) {
    durable_path_ = std::move(path);
    sync_ = sync;
    return *this;
  }

  /// The store file, if the pool is durable.
  const std::optional<std::string>& durable_path() const noexcept {
    return durable_path_;
  }

  sqlite_sync durability() const noexcept {
    return sync_;
  }

  /// With a durable store: the least time between two commits. Under load
  /// one commit (one disk sync) then covers everything that arrived within
  /// it; a lone submit after a quiet spell is committed at once. Longer
  /// intervals trade acknowledgement latency for throughput.
  /// Default 1 ms.
  pool_options& commit_interval(caf::timespan x) {
    commit_interval_ = x;
    return *this;
  }

  caf::timespan commit_interval() const noexcept {
    return commit_interval_;
  }

  /// With a durable store, a unique submit (`enq_unique`) also matches an
  /// operation with its key that finished within this window (Oban's
  /// `unique period`); unfinished ones always match. Default: 0.
  pool_options& unique_window(caf::timespan x) {
    unique_window_ = x;
    return *this;
  }

  caf::timespan unique_window() const noexcept {
    return unique_window_;
  }

  /// With a durable store: finished operations (done, failed, cancelled)
  /// are deleted, with their outcome and attempt history, once they
  /// finished longer than `age` ago (`work_store::prune`, called by the
  /// queue). Must be greater than zero and at least `unique_window`.
  /// Default: kept forever.
  pool_options& retention(caf::timespan age) {
    retention_ = age;
    return *this;
  }

  const std::optional<caf::timespan>& retention() const noexcept {
    return retention_;
  }

  /// Where the pool's log lines go. Default: `default_log_hook()` (spdlog's
  /// logger `"pool"`, stderr).
  pool_options& log(log_hook hook) {
    log_ = std::move(hook);
    return *this;
  }

  /// The hook set with `log`, or the default one.
  log_hook log() const;

  /// Returns an error of code `pool_errc::invalid_option` whose context names
  /// the bad field and says what is allowed; `caf::none` when all is well.
  caf::error validate() const;

private:
  size_t workers_ = 4;
  bool workers_set_ = false;
  worker_kind kind_ = worker_kind::cooperative;
  bool dedicated_control_ = false;
  bool short_cuts_ = true;
  bool hand_ahead_ = true;
  size_t max_batch_ = 16;
  caf::timespan batch_time_ = std::chrono::microseconds(100);
  std::string name_ = "pool";
  uint32_t max_attempts_ = 1;
  caf::timespan backoff_initial_ = std::chrono::milliseconds(100);
  caf::timespan backoff_max_ = std::chrono::seconds(30);
  double backoff_multiplier_ = 2.0;
  double jitter_ = 0.2;
  std::optional<uint64_t> seed_;
  std::optional<caf::timespan> attempt_timeout_;
  int64_t max_restarts_ = 10;
  caf::timespan restart_window_ = std::chrono::seconds(10);
  bool skip_orphaned_ = false;
  std::optional<size_t> capacity_;
  size_t max_parked_ = 0;
  std::optional<size_t> overload_threshold_;
  caf::timespan overload_interval_ = std::chrono::seconds(60);
  std::optional<caf::timespan> backlog_alarm_;
  std::optional<autoscale_limits> autoscale_;
  log_hook log_;
  std::optional<std::string> durable_path_;
  sqlite_sync sync_ = sqlite_sync::full;
  caf::timespan unique_window_{0};
  std::optional<caf::timespan> retention_;
  caf::timespan commit_interval_ = std::chrono::milliseconds(1);
};

} // namespace pool
