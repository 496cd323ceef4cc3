#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include <caf/actor_clock.hpp>
#include <caf/timespan.hpp>

#include "pool/detail/admission.hpp"
#include "pool/histogram.hpp"
#include "pool/metrics.hpp"
#include "pool/detail/operation_table.hpp"
#include "pool/options.hpp"
#include "pool/detail/shepherd_effects.hpp"
#include "pool/stats.hpp"
#include "pool/detail/worker_roster.hpp"

namespace pool {

/// What operators see of a pool: the counters and histograms, the backlog
/// alarm, the overload warning (for a sustained overload only), the
/// autoscaling decisions, and the stats snapshot built from them and the
/// other units. Logs and events go out through the effects. Plain value.
class monitors {
public:
  using time_point = caf::actor_clock::time_point;

  monitors(const pool_options& opts, shepherd_effects& fx);

  /// The counters (`submitted`, `completed`, ...), updated by the shepherd
  /// where things happen.
  pool_stats& counters() noexcept {
    return counters_;
  }

  log_histogram& queue_wait() noexcept {
    return queue_wait_;
  }

  log_histogram& processing() noexcept {
    return processing_;
  }

  /// Notes the due entries no worker holds; checks the backlog condition
  /// (available > workers). Returns a size to grow to (autoscaling).
  std::optional<size_t> note_available(uint64_t available, size_t workers,
                                       size_t configured, bool draining);

  /// Checks the backlog again when its timer fired.
  std::optional<size_t> on_backlog_timer(size_t workers, size_t configured,
                                         bool draining);

  /// Notes the operations waiting for a worker (queued, delayed or parked);
  /// warns once they stayed above the threshold for the sustain time, at
  /// most once per interval.
  void note_waiting(uint64_t waiting, size_t configured) {
    waiting_ = waiting;
    if (waiting > counters_.waiting_high)
      counters_.waiting_high = waiting;
    // (Twice per operation: at or below the threshold with no overload
    // under way, there is nothing to check.)
    if (overload_since_ ||
        waiting > overload_threshold(configured))
      check_overload(configured);
  }

  /// The overload timer fired.
  void on_overload_timer(size_t configured);

  /// A job on a cooperative worker took `elapsed`: counted and logged (at
  /// most once a minute) past the slow-job threshold.
  void note_job_time(caf::timespan elapsed);

  /// A local worker fell asleep: arms the idle timer (autoscaling).
  void note_sleeping(const worker_slot& slot, size_t configured);

  /// The idle timer fired: a size to shrink to, stopping workers asleep for
  /// `shrink_after` (down to the autoscale minimum).
  std::optional<size_t> on_idle_timer(worker_roster& roster, bool draining);

  /// The pool's figures now.
  pool_stats snapshot(const worker_roster& roster, operation_table& table,
                      const admission& adm, size_t abandoned);

  /// The snapshot with the histograms' counters and the oldest due age.
  pool_metrics metrics(const worker_roster& roster, operation_table& table,
                       const admission& adm, size_t abandoned);

private:
  void log(log_level level, const std::string& text);

  void check_backlog(size_t workers, size_t configured, bool draining,
                     std::optional<size_t>& grow);

  void check_overload(size_t configured);

  /// Waiting operations above which the pool is overloaded.
  size_t overload_threshold(size_t configured) const {
    return opts_.overload_threshold().value_or(100 * configured);
  }

  const pool_options& opts_;
  shepherd_effects& fx_;
  pool_stats counters_;
  log_histogram queue_wait_;
  log_histogram processing_;
  uint64_t available_ = 0;
  uint64_t waiting_ = 0;
  /// Since when available > workers; restarted by each autoscale growth.
  std::optional<time_point> backlog_since_;
  std::optional<time_point> grow_since_;
  bool alarm_ = false;
  timer_slot backlog_timer_;
  timer_slot idle_timer_;
  /// Since when waiting > the overload threshold.
  std::optional<time_point> overload_since_;
  std::optional<time_point> last_overload_;
  timer_slot overload_timer_;
  std::optional<time_point> last_slow_warning_;
  uint64_t slow_since_warning_ = 0;
};

} // namespace pool
