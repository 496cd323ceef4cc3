#include "pool/events.hpp"

#include <fmt/format.h>

#include "pool/errors.hpp"
#include "pool/jobs.hpp"

namespace pool {

std::string to_string(event_kind x) {
  switch (x) {
    case event_kind::completed:
      return "completed";
    case event_kind::failed:
      return "failed";
    case event_kind::retried:
      return "retried";
    case event_kind::worker_restarted:
      return "worker_restarted";
    case event_kind::alarm_raised:
      return "alarm_raised";
    case event_kind::alarm_cleared:
      return "alarm_cleared";
    case event_kind::resized:
      return "resized";
    case event_kind::overload:
      return "overload";
    case event_kind::idle:
      return "idle";
  }
  return "unknown";
}

std::string to_string(const pool_event& x) {
  switch (x.kind) {
    case event_kind::completed:
      return fmt::format("completed op#{} result={}", x.operation,
                         describe_message(x.result));
    case event_kind::failed:
      return fmt::format("failed op#{}: {}", x.operation, describe(x.error));
    case event_kind::retried:
      return fmt::format("retried op#{} after attempt {}: {}", x.operation,
                         x.attempt, describe(x.error));
    default:
      return fmt::format("{} count={}", to_string(x.kind), x.count);
  }
}

} // namespace pool
