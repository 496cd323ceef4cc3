#include "pool/detail/supervision.hpp"

#include "pool/duration_text.hpp"

namespace pool {

supervision::supervision(int64_t max_restarts, caf::timespan window,
                         uint32_t max_attempts, backoff delays)
    : max_restarts_(max_restarts), window_(window), max_attempts_(max_attempts),
      delays_(std::move(delays)) {
  // nop
}

bool supervision::note_restart(time_point now) {
  restarts_.push_back(now);
  return static_cast<int64_t>(restarts_in_window(now)) <= max_restarts_;
}

size_t supervision::restarts_in_window(time_point now) {
  while (!restarts_.empty() && restarts_.front() + window_ < now)
    restarts_.pop_front();
  return restarts_.size();
}

std::string supervision::intensity_text() const {
  return "more than " + std::to_string(max_restarts_) + " restarts within " +
         duration_text(window_);
}

std::optional<supervision::time_point>
supervision::retry_at(uint32_t failed, const operation_policy& policy,
                      time_point now) {
  if (failed >= attempts_for(policy))
    return std::nullopt;
  return now + delays_.next(failed);
}

} // namespace pool
