#pragma once

#include <chrono>
#include <cstddef>

#include <caf/timespan.hpp>

namespace pool {

/// The speed mechanisms of the dispatcher, as one value (docs/design.md,
/// "Dispatch"). Each applies to the pool's own workers only; joined workers
/// always get the pattern's plain pull. Every field can be switched off on
/// its own (the ablation benchmark measures each).
struct dispatch_tuning {
  /// Answer `go_sleep` without asking the queue when it holds nothing due
  /// (non-durable stores).
  bool sleep_without_queue = true;
  /// While every worker is busy, take due entries out ahead of time so that
  /// a worker that reports gets its next one at once.
  bool prefetch = true;
  /// Send a busy worker its next batch while it runs the current one, so
  /// that it never waits for the shepherd between two (needs `prefetch`).
  bool lookahead = true;
  /// Most jobs in one `work_to_do`; 1: no batches.
  size_t max_batch = 64;
  /// How long the jobs of one batch may take together.
  caf::timespan batch_time = std::chrono::milliseconds(1);
  /// While an add due now is on its way, keep further entries due now and
  /// send them in one `add_work` (only with `max_batch` above 1).
  bool group_adds = true;

  /// Both short cuts at once (`pool_options::short_cuts`).
  dispatch_tuning& short_cuts(bool on) noexcept {
    sleep_without_queue = prefetch = on;
    return *this;
  }

  /// Whether any short cut is on.
  bool any_short_cut() const noexcept {
    return sleep_without_queue || prefetch;
  }
};

} // namespace pool
