#include "pool/job_options.hpp"

#include <chrono>

#include "pool/duration_text.hpp"
#include "pool/errors.hpp"

namespace pool {

namespace {

/// Longest delay or attempt timeout: long enough for any use, short enough
/// that adding it to a clock reading cannot overflow.
constexpr caf::timespan max_span = std::chrono::hours{24 * 365 * 100};

caf::error bad(const char* field, std::string why) {
  return caf::make_error(pool_errc::invalid_option, std::string{field},
                         std::move(why));
}

caf::error check_key(const char* field, const std::string& key) {
  if (key.size() > job_options::max_key_size)
    return bad(field, "must be at most "
                          + std::to_string(job_options::max_key_size)
                          + " bytes (got " + std::to_string(key.size())
                          + ")");
  return caf::none;
}

} // namespace

caf::error job_options::validate() const {
  if (priority_ < 0 || priority_ > max_priority)
    return bad("priority", "must be 0 to " + std::to_string(max_priority)
                               + " (got " + std::to_string(priority_)
                               + "); higher runs first, 0 is the default");
  if (attempt_timeout_ < caf::timespan::zero() || attempt_timeout_ > max_span)
    return bad("attempt_timeout",
               "must be 0 (the pool's) up to 100 years (got "
                   + duration_text(attempt_timeout_) + ")");
  if (delay_ < caf::timespan::zero() || delay_ > max_span)
    return bad("delay", "must be 0 up to 100 years (got "
                            + duration_text(delay_) + ")");
  if (auto err = check_key("unique_key", unique_key_))
    return err;
  return check_key("concurrency_key", concurrency_key_);
}

} // namespace pool
