#pragma once

#include <string>

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
