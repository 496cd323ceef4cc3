#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/timestamp.hpp>

#include "pool/events.hpp"
#include "pool/metrics.hpp"

namespace pool {

/// One snapshot and when it was taken (wall time).
struct metrics_sample {
  caf::timestamp at;
  pool_metrics metrics;
};

/// The last snapshots of one pool, oldest first, at most `capacity`: what
/// rates and windowed quantiles are computed from (the difference of two
/// cumulative snapshots). Plain value; not thread-safe.
class metrics_history {
public:
  explicit metrics_history(size_t capacity = 600);

  void add(caf::timestamp at, pool_metrics metrics);

  bool empty() const noexcept {
    return samples_.empty();
  }

  const std::deque<metrics_sample>& samples() const noexcept {
    return samples_;
  }

  /// The newest sample; requires `!empty()`.
  const metrics_sample& latest() const {
    return samples_.back();
  }

  /// The newest sample taken at least `window` before the latest one, or
  /// the oldest one when the history is shorter; requires `!empty()`.
  const metrics_sample& before(caf::timespan window) const;

private:
  size_t capacity_;
  std::deque<metrics_sample> samples_;
};

/// What went wrong recently in one pool, from its events: final failures
/// with the errors of every earlier attempt, and health events (restarts,
/// alarms, resizes, overload). Bounded: keeps the last `keep` of each and
/// the attempt errors of at most `tracked` unfinished operations (the
/// oldest are forgotten first and counted). Plain value.
class event_log {
public:
  struct failure {
    uint64_t operation = 0;
    caf::timestamp at;
    /// The final error (or the cancellation).
    std::string error;
    /// Errors of the earlier attempts, oldest first.
    std::vector<std::string> attempts;
  };

  struct health {
    caf::timestamp at;
    /// `to_string(event_kind)`, e.g. `"worker_restarted"`.
    std::string kind;
    uint64_t count = 0;
  };

  explicit event_log(size_t keep = 50, size_t tracked = 4096);

  void note(const pool_event& ev, caf::timestamp at);

  /// Newest first.
  const std::deque<failure>& failures() const noexcept {
    return failures_;
  }

  /// Newest first.
  const std::deque<health>& health_events() const noexcept {
    return health_;
  }

  /// Operations whose earlier attempt errors were forgotten for room.
  uint64_t forgotten() const noexcept {
    return forgotten_;
  }

private:
  size_t keep_;
  size_t tracked_;
  std::unordered_map<uint64_t, std::vector<std::string>> attempts_;
  std::deque<uint64_t> tracked_order_;
  std::deque<failure> failures_;
  std::deque<health> health_;
  uint64_t forgotten_ = 0;
};

/// One pool as the JSON API shows it (`/api/stats`): every stats figure,
/// utilization, throughput and wait/run p50/p95/p99 over the last `window`,
/// a series of points over the history (one per sample interval) for
/// sparklines, and the recent failures and health events.
std::string pool_json(const std::string& name, const metrics_history& history,
                      const event_log& events, caf::timespan window);

} // namespace pool
