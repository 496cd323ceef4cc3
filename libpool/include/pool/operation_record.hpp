#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>
#include <caf/meta/type_name.hpp>

#include "pool/job_options.hpp"
#include "pool/work_record.hpp"

namespace pool {

/// Where an operation stands in a durable store. The numeric values are
/// stored on disk: never renumber.
enum class operation_state : uint8_t {
  /// Accepted and waiting in the queue (due now or delayed).
  queued = 0,
  /// Handed out to a worker (`pop_due`), no outcome yet.
  running = 1,
  /// Finished with a result.
  done = 2,
  /// Finished with a final error.
  failed = 3,
  /// Removed from the queue before it finished.
  cancelled = 4,
  /// Failed for good, then discarded from the dead set by an operator.
  /// The shepherd's memory says so (`op_status`), for as long as its dead
  /// set's bounds keep the note; a shared store (`pg_store`) keeps it too,
  /// until its retention prunes it.
  discarded = 5,
  /// Failed by a drain's deadline before it ended (stored as `failed`).
  stopped = 6,
};

/// Returns the stable name of `x`, e.g. `"queued"`.
std::string to_string(operation_state x);

/// Returns whether `x` is `queued` or `running`.
constexpr bool is_unfinished(operation_state x) noexcept {
  return x == operation_state::queued || x == operation_state::running;
}

/// Everything a durable store knows about one operation: what a restarted
/// shepherd adopts and what a status lookup reports. Plain value.
struct operation_record {
  /// Operation id, as in `attempt_id::operation`.
  uint64_t id = 0;
  operation_state state = operation_state::queued;
  /// The attempt last pushed (1 = the first).
  uint32_t attempt = 0;
  /// The operation's input, as submitted.
  caf::message payload;
  /// The result, when `state == done`.
  caf::message result;
  /// The final error, when `state == failed`.
  caf::error error;
  /// Every failed attempt, oldest first.
  std::vector<attempt_failure> history;
  /// The unique key (`work_store::set_key`); empty for none.
  std::string key;
  /// The options it was submitted with (`work_store::set_options`).
  job_options options;
  /// For `work_store::unfinished`: when its entry is due, on the actor clock
  /// (a restarted shepherd counts it as delayed until then). Local only:
  /// neither stored nor sent.
  caf::actor_clock::time_point due{};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, operation_record& x) {
  return f(caf::meta::type_name("pool::operation_record"), x.id, x.state,
           x.attempt, x.payload, x.result, x.error, x.history, x.key, x.options);
}

} // namespace pool
