#include "pool/options.hpp"

#include <thread>

#include "pool/errors.hpp"

namespace pool {

std::string to_string(worker_kind x) {
  return x == worker_kind::dedicated ? "dedicated" : "cooperative";
}

size_t default_dedicated_workers() {
  auto cores = std::thread::hardware_concurrency();
  return cores > 1 ? cores - 1 : 1;
}

size_t pool_options::workers() const noexcept {
  if (!workers_set_ && kind_ == worker_kind::dedicated)
    return default_dedicated_workers();
  return workers_;
}

caf::error pool_options::validate() const {
  auto bad = [](const char* field, const char* why) {
    return caf::make_error(pool_errc::invalid_option, std::string{field},
                           std::string{why});
  };
  if (workers() == 0)
    return bad("workers", "must be at least 1");
  if (name_.empty())
    return bad("name", "must not be empty");
  return caf::none;
}

} // namespace pool
