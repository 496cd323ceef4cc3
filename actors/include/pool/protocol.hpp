#pragma once

// The public protocol between callers, the shepherd, the queue and workers.
// Atoms and message types are declared in the project's type-ID block
// (pool/type_ids.hpp); docs/protocol.md documents every message with its
// sender, receiver, fields and sequence diagrams. Any actor that speaks the
// worker side may join a shepherd with `(join_pool, actor)`.

#include <string>

#include "pool/errors.hpp"
#include "pool/stats.hpp"
#include "pool/type_ids.hpp"
#include "pool/work_record.hpp"

namespace pool {

/// The worker state machine: sleeping -> waiting -> working -> waiting.
enum class worker_phase {
  /// Told `go_sleep`; waits for `wake_up`.
  sleeping,
  /// Sent `give_work` (or was woken); waits for `work_to_do` or `go_sleep`.
  waiting,
  /// Holds an attempt; ends with `status_rep` and a new `give_work`.
  working,
};

/// Returns `"sleeping"`, `"waiting"` or `"working"`.
std::string to_string(worker_phase x);

} // namespace pool
