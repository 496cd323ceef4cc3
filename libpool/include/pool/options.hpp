#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include "pool/key_limits.hpp"
#include "pool/option_groups.hpp"

namespace pool {

/// Everything a pool is configured with, as one value with chained setters.
/// Setters never fail; `validate()` names the first bad field. Plain value:
/// copy it freely, from any thread.
class pool_options {
public:
  /// Number of workers (resource instances). Default: 4 for cooperative
  /// pools; `default_dedicated_workers()` when `kind(dedicated)` is chosen
  /// and no count was set; the autoscale minimum with `autoscale`.
  pool_options& workers(size_t n) {
    sizing_.workers = n;
    sizing_.workers_set = true;
    return *this;
  }

  size_t workers() const noexcept;

  /// Cooperative (default) or dedicated workers.
  pool_options& kind(worker_kind x) {
    sizing_.kind = x;
    return *this;
  }

  worker_kind kind() const noexcept {
    return sizing_.kind;
  }

  /// Whether the shepherd takes the short cuts docs/protocol.md describes
  /// for the pool's own workers: ask the queue on a sleeping worker's
  /// behalf when work is due (they take work in any state: no wake-up
  /// round trip), tell a worker asking while nothing is due to sleep
  /// without asking the queue (non-durable stores), and take due entries
  /// out ahead while every worker is busy. Every entry still comes out of
  /// the queue. Default: yes. Without them, every worker goes through the
  /// pattern's plain sequence (wake_up, give_work, get_work, work_to_do),
  /// as joined workers always do.
  pool_options& short_cuts(bool x) {
    dispatch_.short_cuts(x);
    return *this;
  }

  bool short_cuts() const noexcept {
    return dispatch_.any_short_cut();
  }

  /// Whether a busy local worker gets its next batch while it runs the
  /// current one (docs/protocol.md "Lookahead"), so that it starts it
  /// without waiting for the shepherd to answer its report. At most one
  /// batch ahead per worker; only while entries are taken out ahead
  /// (`short_cuts`) and no rate or per-key limit applies. Default: yes.
  pool_options& lookahead(bool x) {
    dispatch_.lookahead = x;
    return *this;
  }

  bool lookahead() const noexcept {
    return dispatch_.lookahead;
  }

  /// Most jobs handed to one of the pool's own workers in one
  /// `work_to_do` (adaptive batching, docs/protocol.md "Batches"). The
  /// shepherd batches only while more entries are due than there are
  /// workers, and sizes a batch so that its jobs are expected to take
  /// about `batch_time`, judged by the processing times it observed; jobs
  /// longer than half of `batch_time` go one at a time, so an uneven job
  /// never holds up others. With an `attempt_timeout`, each attempt of a
  /// batch reports as it finishes and is timed on its own. 1 turns
  /// batching off. Default: 64.
  pool_options& max_batch(size_t n) {
    dispatch_.max_batch = n;
    return *this;
  }

  size_t max_batch() const noexcept {
    return dispatch_.max_batch;
  }

  /// How long the jobs of one batch are expected to take together, at
  /// most (see `max_batch`). Default: 1 ms (a worker turns to the
  /// shepherd about once per millisecond; with 100 us, 20 us jobs on two
  /// workers ran at 0.64 of ideal against 0.82, docs/benchmarks.md).
  pool_options& batch_time(caf::timespan x) {
    dispatch_.batch_time = x;
    return *this;
  }

  caf::timespan batch_time() const noexcept {
    return dispatch_.batch_time;
  }

  /// A name used in log lines and stats; default `"pool"`.
  pool_options& name(std::string x) {
    monitoring_.name = std::move(x);
    return *this;
  }

  const std::string& name() const noexcept {
    return monitoring_.name;
  }

  /// Attempts per operation, including the first; 1 means no retry.
  /// Default 1.
  pool_options& max_attempts(uint32_t n) {
    retry_.max_attempts = n;
    return *this;
  }

  uint32_t max_attempts() const noexcept {
    return retry_.max_attempts;
  }

  /// Delay before a retry: `initial * multiplier^(n-1)` after the n-th
  /// failure, capped at `max`. Default 100 ms, 30 s, 2.0.
  pool_options& backoff(caf::timespan initial, caf::timespan max,
                        double multiplier = 2.0) {
    retry_.backoff_initial = initial;
    retry_.backoff_max = max;
    retry_.backoff_multiplier = multiplier;
    return *this;
  }

  caf::timespan backoff_initial() const noexcept {
    return retry_.backoff_initial;
  }

  caf::timespan backoff_max() const noexcept {
    return retry_.backoff_max;
  }

  double backoff_multiplier() const noexcept {
    return retry_.backoff_multiplier;
  }

  /// Random extra delay, as a fraction of the backoff delay, in [0, 1].
  /// Default 0.2.
  pool_options& jitter(double fraction) {
    retry_.jitter = fraction;
    return *this;
  }

  double jitter() const noexcept {
    return retry_.jitter;
  }

  /// Seed of the jitter generator; fix it for reproducible delays.
  /// Default: drawn from std::random_device at spawn.
  pool_options& seed(uint64_t x) {
    retry_.seed = x;
    return *this;
  }

  std::optional<uint64_t> seed() const noexcept {
    return retry_.seed;
  }

  /// Longest an attempt may run. When it passes, the attempt fails (the
  /// retry policy applies) and its worker is replaced. Default: no limit.
  pool_options& attempt_timeout(caf::timespan x) {
    retry_.attempt_timeout = x;
    return *this;
  }

  std::optional<caf::timespan> attempt_timeout() const noexcept {
    return retry_.attempt_timeout;
  }

  /// Restart intensity as in OTP supervisors: more than `max_restarts`
  /// restarts (of workers or the queue) within `window` make the shepherd
  /// give up and exit with `pool_errc::restart_intensity`. Default 10 in
  /// 10 s.
  pool_options& restart_intensity(int64_t max_restarts, caf::timespan window) {
    supervision_.max_restarts = max_restarts;
    supervision_.restart_window = window;
    return *this;
  }

  int64_t max_restarts() const noexcept {
    return supervision_.max_restarts;
  }

  caf::timespan restart_window() const noexcept {
    return supervision_.restart_window;
  }

  /// When set, an operation whose calling actor has terminated is not
  /// started (it ends as `cancelled`). Costs a monitor per distinct caller
  /// with pending operations. Default: off.
  pool_options& skip_orphaned(bool x) {
    supervision_.skip_orphaned = x;
    return *this;
  }

  bool skip_orphaned() const noexcept {
    return supervision_.skip_orphaned;
  }

  /// Bounds the operations waiting for a worker (queued or delayed, not
  /// counting those running). When full, a submit is rejected at once with
  /// `pool_errc::overloaded`, or, after `wait_when_full(n)`, answered only
  /// once there is room, with at most `n` submits waiting (beyond: rejected).
  /// Default: unbounded.
  pool_options& capacity(size_t n) {
    admission_.capacity = n;
    return *this;
  }

  std::optional<size_t> capacity() const noexcept {
    return admission_.capacity;
  }

  /// At most `starts` attempts start in any window of length `per`
  /// (retries count; docs/operations.md, "Flow control").
  pool_options& rate_limit(uint64_t starts, caf::timespan per) {
    admission_.rate_limit = start_rate{starts, per};
    return *this;
  }

  const std::optional<start_rate>& rate_limit() const noexcept {
    return admission_.rate_limit;
  }

  /// With a capacity: park up to `max_waiting` submits until there is room
  /// instead of rejecting them. Default: reject (0 parked).
  pool_options& wait_when_full(size_t max_waiting) {
    admission_.max_parked = max_waiting;
    return *this;
  }

  size_t max_parked() const noexcept {
    return admission_.max_parked;
  }

  /// Logs a warning when more than `threshold` operations wait for a
  /// worker (queued or delayed, not running), at most once per `interval`;
  /// subscribers also get an `overload` event. Default: 100 × workers, 60 s.
  pool_options& overload_warning(size_t threshold, caf::timespan interval) {
    monitoring_.overload_threshold = threshold;
    monitoring_.overload_interval = interval;
    return *this;
  }

  /// Sets only the least time between two overload warnings.
  pool_options& overload_interval(caf::timespan interval) {
    monitoring_.overload_interval = interval;
    return *this;
  }

  /// The explicit threshold, if one was set (else 100 × workers applies).
  std::optional<size_t> overload_threshold() const noexcept {
    return monitoring_.overload_threshold;
  }

  caf::timespan overload_interval() const noexcept {
    return monitoring_.overload_interval;
  }

  /// How long more than the threshold must wait before the overload
  /// warning: a burst that drains sooner is what a queue is for, and warns
  /// nobody. Default: 5 s (0 warns at once).
  pool_options& overload_sustain(caf::timespan x) {
    monitoring_.overload_sustain = x;
    return *this;
  }

  caf::timespan overload_sustain() const noexcept {
    return monitoring_.overload_sustain;
  }

  /// Raises the backlog alarm when the operations available now stay above
  /// the number of workers for longer than `after`; it clears once they
  /// drop below. Raising and clearing are logged and sent as events.
  /// Default: off.
  pool_options& backlog_alarm(caf::timespan after) {
    monitoring_.backlog_alarm = after;
    return *this;
  }

  std::optional<caf::timespan> backlog_alarm() const noexcept {
    return monitoring_.backlog_alarm;
  }

  /// A job on a cooperative worker that runs longer than `threshold` holds
  /// a CAF scheduler thread from every other actor meanwhile: the shepherd
  /// counts it (`pool_stats::slow_jobs`) and logs a warning, at most once a
  /// minute. 0 turns the warning off. Default: 100 ms. (Dedicated workers
  /// have threads of their own and are never warned about.)
  pool_options& slow_job_warning(caf::timespan threshold) {
    monitoring_.slow_job = threshold;
    return *this;
  }

  caf::timespan slow_job_warning() const noexcept {
    return monitoring_.slow_job;
  }

  using autoscale_limits = sizing_options::autoscale_limits;

  /// Autoscaling between `min` and `max` local workers: when the backlog
  /// condition (available > workers) persists for `grow_after`, the pool
  /// grows (doubling, at most to the backlog and to `max`); a worker that
  /// sleeps for `shrink_after` stops, down to `min`. `workers()` is the
  /// starting size and must lie within [min, max]. Default: off.
  pool_options& autoscale(size_t min, size_t max, caf::timespan grow_after,
                          caf::timespan shrink_after) {
    sizing_.autoscale = autoscale_limits{min, max, grow_after, shrink_after};
    return *this;
  }

  const std::optional<autoscale_limits>& autoscale() const noexcept {
    return sizing_.autoscale;
  }

  /// Keeps the queue in an SQLite file at `path` (`pool::sqlite_store`):
  /// accepted work survives a crash of the process and is run again by the
  /// next pool over the same file (at-least-once); outcomes are recorded
  /// for `op_status`. `sync` is `full` (survives a power loss) or `normal`
  /// (survives a process crash, not a power loss). Payload types must be
  /// serializable by CAF and known to the actor system. Default: in memory.
  pool_options& durable(std::string path,
                        sqlite_sync sync = sqlite_sync::full) {
    durability_.path = std::move(path);
    durability_.sync = sync;
    return *this;
  }

  /// The store file, if the pool is durable.
  const std::optional<std::string>& durable_path() const noexcept {
    return durability_.path;
  }

  sqlite_sync durability() const noexcept {
    return durability_.sync;
  }

  /// Keeps the queue in PostgreSQL (`pool::pg_store`, docs/postgres.md):
  /// `conninfo` names the server (a `postgres://` URI or libpq's
  /// `key=value` pairs), `queue` the shared queue. Pools in any process on
  /// any host that name the same queue in the same database share it: each
  /// runs its own workers on what it claims. Everything `durable` promises
  /// holds, across processes; attempts are leased (a dead process's
  /// attempts are run again by the others). Excludes `durable`. Default:
  /// in memory.
  pool_options& postgres(std::string conninfo, std::string queue = "default") {
    durability_.postgres = std::move(conninfo);
    durability_.pg.queue(std::move(queue));
    return *this;
  }

  /// As above, with every setting of the store (`pg_options`: queue,
  /// schema, lease, global concurrency limit, safety poll, claim batch,
  /// connect timeout). The pool's `retention` applies unless `opts` sets
  /// one.
  pool_options& postgres(std::string conninfo, pg_options opts) {
    durability_.postgres = std::move(conninfo);
    durability_.pg = std::move(opts);
    return *this;
  }

  /// The PostgreSQL conninfo, if the queue lives there.
  const std::optional<std::string>& postgres_conninfo() const noexcept {
    return durability_.postgres;
  }

  const pg_options& postgres_options() const noexcept {
    return durability_.pg;
  }

  /// Opens the queue's store with `factory` (the way Oban takes an engine):
  /// a program's own `work_store`, or a wrapper around a library's. When
  /// set, `store_for` calls it whatever else the options name; it sees
  /// every option (`durable_path`, `postgres_conninfo`, ...). Default:
  /// the store `durable` or `postgres` names, else in memory.
  pool_options& store(store_factory factory) {
    durability_.store = std::move(factory);
    return *this;
  }

  const store_factory& store() const noexcept {
    return durability_.store;
  }

  /// With a durable store: the least time between two commits. Under load
  /// one commit (one disk sync) then covers everything that arrived within
  /// it; a lone submit after a quiet spell is committed at once. Longer
  /// intervals trade acknowledgement latency for throughput.
  /// Default 1 ms.
  pool_options& commit_interval(caf::timespan x) {
    durability_.commit_interval = x;
    return *this;
  }

  caf::timespan commit_interval() const noexcept {
    return durability_.commit_interval;
  }

  /// With a durable store, a unique submit (`enq_unique`) also matches an
  /// operation with its key that finished within this window (Oban's
  /// `unique period`); unfinished ones always match. Default: 0.
  pool_options& unique_window(caf::timespan x) {
    durability_.unique_window = x;
    return *this;
  }

  caf::timespan unique_window() const noexcept {
    return durability_.unique_window;
  }

  /// Every speed mechanism of the dispatcher at once (docs/design.md,
  /// "Dispatch"); `short_cuts`, `lookahead`, `max_batch` and `batch_time`
  /// set parts of it.
  pool_options& dispatch(dispatch_tuning x) {
    dispatch_ = x;
    return *this;
  }

  const dispatch_tuning& dispatch() const noexcept {
    return dispatch_;
  }

  /// Per-key limits (concurrency, start rate) for operations submitted
  /// with a concurrency key, and priority aging (pool/key_limits.hpp,
  /// docs/operations.md "Per-key limits"). Default: none, strict
  /// priorities.
  pool_options& key_flow(key_flow_options x) {
    key_flow_ = std::move(x);
    return *this;
  }

  const key_flow_options& key_flow() const noexcept {
    return key_flow_;
  }

  /// With a durable store: finished operations (done, failed, cancelled)
  /// are deleted, with their outcome and attempt history, once they
  /// finished longer than `age` ago (`work_store::prune`, called by the
  /// queue). Must be greater than zero and at least `unique_window`.
  /// Default: kept forever.
  pool_options& retention(caf::timespan age) {
    durability_.retention = age;
    return *this;
  }

  const std::optional<caf::timespan>& retention() const noexcept {
    return durability_.retention;
  }

  /// The dead set: operations that failed for good, kept for retry or
  /// discard (`dead_set_options`). Default: 10,000 jobs, 7 days.
  pool_options& dead_set(dead_set_options x) {
    retry_.dead_set = x;
    return *this;
  }

  const dead_set_options& dead_set() const noexcept {
    return retry_.dead_set;
  }

  /// Where the pool's log lines go. Default: `default_log_hook()` (spdlog's
  /// logger `"pool"`, stderr).
  pool_options& log(log_hook hook) {
    monitoring_.log = std::move(hook);
    return *this;
  }

  /// The hook set with `log`, or the default one.
  log_hook log() const;

  /// Returns an error of code `pool_errc::invalid_option` whose context names
  /// the bad field and says what is allowed; `caf::none` when all is well.
  caf::error validate() const;

private:
  caf::error validate_dispatch() const;

  sizing_options sizing_;
  retry_options retry_;
  supervision_options supervision_;
  admission_options admission_;
  monitoring_options monitoring_;
  durability_options durability_;
  dispatch_tuning dispatch_;
  key_flow_options key_flow_;
};

} // namespace pool
