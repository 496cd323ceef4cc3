#include "pool/pg_options.hpp"

#include "pool/errors.hpp"

namespace pool {

namespace detail {

/// Also declared in pg_schema.hpp for the store; defined here so that
/// validating options needs no libpq.
bool pg_valid_schema_name(const std::string& name);

bool pg_valid_schema_name(const std::string& name) {
  if (name.empty() || name.size() > 63 || (name[0] >= '0' && name[0] <= '9'))
    return false;
  for (auto c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

} // namespace detail

caf::error pg_options::validate() const {
  auto bad = [](const char* field, std::string why) {
    return caf::make_error(pool_errc::invalid_option, std::string{field},
                           std::move(why));
  };
  if (queue_.empty() || queue_.size() > 200)
    return bad("queue", "must have 1 to 200 bytes");
  if (!detail::pg_valid_schema_name(schema_))
    return bad("schema", "must be 1 to 63 lower-case letters, digits or _, "
                         "not starting with a digit");
  if (lease_ < std::chrono::seconds(1))
    return bad("lease", "must be at least 1 s");
  if (concurrency_limit_ && *concurrency_limit_ == 0)
    return bad("concurrency_limit", "must be at least 1");
  if (retention_ && *retention_ <= caf::timespan::zero())
    return bad("retention", "must be greater than zero");
  if (safety_poll_ < std::chrono::milliseconds(100))
    return bad("safety_poll", "must be at least 100 ms");
  if (claim_batch_ < 1 || claim_batch_ > 1000)
    return bad("claim_batch", "must be 1 to 1000");
  if (connect_timeout_ < std::chrono::seconds(1) ||
      connect_timeout_ > std::chrono::hours(1))
    return bad("connect_timeout", "must be 1 s to 1 h");
  if (outage_limit_ < std::chrono::seconds(1))
    return bad("outage_limit", "must be at least 1 s");
  return caf::none;
}

} // namespace pool
