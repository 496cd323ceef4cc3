#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include <caf/actor_clock.hpp>
#include <caf/timespan.hpp>

#include "pool/backoff.hpp"
#include "pool/detail/operation_table.hpp"

namespace pool {

/// The shepherd's two supervision decisions, as data: the restart intensity
/// of OTP supervisors (at most `max_restarts` restarts of workers or the
/// queue within a sliding `window`, else give up), and whether a failed
/// attempt runs again (attempts left, after a backoff delay with jitter),
/// with a per-operation policy overriding the pool's. Plain value.
class supervision {
public:
  using time_point = caf::actor_clock::time_point;

  supervision(int64_t max_restarts, caf::timespan window, uint32_t max_attempts,
              backoff delays);

  /// Records a restart at `now`; false when there were more than allowed
  /// within the window (the shepherd gives up).
  bool note_restart(time_point now);

  /// Restarts within the window that ends at `now`.
  size_t restarts_in_window(time_point now);

  /// Why the shepherd gave up, e.g. "more than 10 restarts within 10s".
  std::string intensity_text() const;

  int64_t max_restarts() const noexcept {
    return max_restarts_;
  }

  caf::timespan restart_window() const noexcept {
    return window_;
  }

  /// When attempt `failed + 1` of an operation with `policy` is due, or none
  /// if `failed` was its last attempt.
  std::optional<time_point>
  retry_at(uint32_t failed, const operation_policy& policy, time_point now);

  /// Attempts in total for an operation with `policy`.
  uint32_t attempts_for(const operation_policy& policy) const noexcept {
    return policy.max_attempts != 0 ? policy.max_attempts : max_attempts_;
  }

private:
  int64_t max_restarts_;
  caf::timespan window_;
  uint32_t max_attempts_;
  backoff delays_;
  /// Times of recent restarts, oldest first.
  std::deque<time_point> restarts_;
};

} // namespace pool
