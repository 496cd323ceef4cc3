#pragma once

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/message.hpp>
#include <caf/meta/type_name.hpp>

namespace pool {

/// What happened in a pool. Subscribers choose kinds with `event_mask`.
enum class event_kind : uint8_t {
  /// An operation finished with a result (`operation`, `result`).
  completed = 0,
  /// An operation failed for good or was cancelled (`operation`, `error`).
  failed = 1,
  /// An attempt failed and the operation will run again (`operation`,
  /// `attempt` = the attempt that failed, `error`).
  retried = 2,
  /// A local worker was respawned after dying or timing out (`count` =
  /// worker restarts so far).
  worker_restarted = 3,
  /// The backlog alarm was raised (`count` = operations available).
  alarm_raised = 4,
  /// The backlog alarm cleared (`count` = operations available).
  alarm_cleared = 5,
  /// The pool was resized, by request or by autoscaling (`count` = the new
  /// number of local workers).
  resized = 6,
  /// Waiting operations exceeded the overload threshold (`count` =
  /// operations waiting); sent at most once per overload interval.
  overload = 7,
  /// Nothing is pending any more: every submit so far has ended (sent each
  /// time the pool becomes idle; `(wait_idle)` waits for the same without
  /// a subscription).
  idle = 8,
};

/// Returns the enumerator's name, e.g. `"completed"`.
std::string to_string(event_kind x);

/// Bit for one kind in a subscription mask.
constexpr uint32_t event_bit(event_kind x) noexcept {
  return uint32_t{1} << static_cast<uint32_t>(x);
}

/// Subscription masks.
namespace event_mask {

/// Every kind (`idle` is the last).
constexpr uint32_t all = (event_bit(event_kind::idle) << 1) - 1;
/// Outcomes of operations: completed and failed.
constexpr uint32_t outcomes =
    event_bit(event_kind::completed) | event_bit(event_kind::failed);
/// Everything but per-operation events.
constexpr uint32_t health = all & ~outcomes & ~event_bit(event_kind::retried);

} // namespace event_mask

/// One event, sent as a message `(pool_event)` to every subscriber whose
/// mask includes its kind (subscribe with `(pool_sub, actor[, mask])`).
struct pool_event {
  event_kind kind = event_kind::completed;
  /// The operation concerned (completed, failed, retried); else 0.
  uint64_t operation = 0;
  /// The attempt that failed (retried); else 0.
  uint32_t attempt = 0;
  /// A figure that depends on the kind (see `event_kind`).
  uint64_t count = 0;
  /// The operation's result (completed).
  caf::message result;
  /// Why (failed, retried).
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pool_event& x) {
  return f(caf::meta::type_name("pool::pool_event"), x.kind, x.operation,
           x.attempt, x.count, x.result, x.error);
}

/// One line, e.g. `completed op#3 result=(42)`.
std::string to_string(const pool_event& x);

} // namespace pool
