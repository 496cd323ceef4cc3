#include "pool/operation_record.hpp"

namespace pool {

std::string to_string(operation_state x) {
  switch (x) {
    case operation_state::queued:
      return "queued";
    case operation_state::running:
      return "running";
    case operation_state::done:
      return "done";
    case operation_state::failed:
      return "failed";
    case operation_state::cancelled:
      return "cancelled";
    case operation_state::discarded:
      return "discarded";
    case operation_state::stopped:
      return "stopped";
  }
  return "operation_state(" + std::to_string(static_cast<int>(x)) + ")";
}

} // namespace pool
