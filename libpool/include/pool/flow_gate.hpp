#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include <caf/actor_clock.hpp>
#include <caf/error.hpp>
#include <caf/timespan.hpp>

namespace pool {

/// A limit on how many attempts may start per period: at most `starts` in
/// any window of length `per` (a sliding window, not fixed slots).
struct start_rate {
  uint64_t starts = 0;
  caf::timespan per{0};

  /// Most starts a limit may allow per period (the gate remembers the
  /// time of each start within the period).
  static constexpr uint64_t max_starts = 1'000'000;

  /// `invalid_option` naming `field` when `starts` is 0 or above
  /// `max_starts`, or `per` is not positive.
  caf::error validate(const char* field = "rate_limit") const;
};

/// Whether attempts may start now: the pool's pause switch and its
/// start-rate limit, as one gate that the dispatcher asks before every
/// start. The limit is a token bucket of `starts` tokens in which each
/// token comes back exactly `per` after it was spent, so that no window of
/// length `per` ever sees more than `starts` starts (a bucket refilled at
/// a steady rate would allow twice that across a window boundary).
/// Tokens may be reserved for a start whose entry is still on its way
/// from the queue. Plain value; the clock is passed in.
class flow_gate {
public:
  using time_point = caf::actor_clock::time_point;

  explicit flow_gate(std::optional<start_rate> limit = std::nullopt);

  // -- pause ------------------------------------------------------------------

  void pause() noexcept {
    paused_ = true;
  }

  void resume() noexcept {
    paused_ = false;
  }

  bool paused() const noexcept {
    return paused_;
  }

  // -- starts -----------------------------------------------------------------

  /// Whether the gate can hold anything back (paused, or a rate limit).
  bool limited() const noexcept {
    return paused_ || limit_.has_value();
  }

  const std::optional<start_rate>& limit() const noexcept {
    return limit_;
  }

  /// How many of `n` attempts may start (or be reserved) at `now`. Time
  /// must not go back: asking forgets starts older than a period.
  size_t allowed(time_point now, size_t n) {
    return limited() ? allowed_limited(now, n) : n;
  }

  /// `n` attempts started at `now` (each spends a token).
  void started(time_point now, size_t n) {
    if (limit_)
      spend(now, n);
  }

  /// Sets `n` tokens aside for starts that come later (entries on their
  /// way); `release` gives them back before those starts.
  void reserve(size_t n = 1) noexcept {
    reserved_ += n;
  }

  void release(size_t n = 1) noexcept {
    reserved_ -= std::min(n, reserved_);
  }

  /// `n` attempts handed out together (a batch) start one after the other
  /// at times the gate does not see: their tokens stay spent until
  /// `settle` at the batch's end, and count as spent then (no start of the
  /// batch was later), so each comes back one period after the batch
  /// ended.
  void hold(size_t n) noexcept {
    held_ += n;
  }

  void settle(time_point now, size_t n);

  /// When the next token comes back, if none is free at `now`;
  /// `time_point::max()` while paused; `now` if one is free.
  time_point next_start(time_point now);

private:
  size_t allowed_limited(time_point now, size_t n);

  void spend(time_point now, size_t n);

  /// Forgets starts older than one period.
  void expire(time_point now);

  std::optional<start_rate> limit_;
  bool paused_ = false;
  size_t reserved_ = 0;
  size_t held_ = 0;
  /// The starts of the last period, oldest first.
  std::deque<time_point> spent_;
};

} // namespace pool
