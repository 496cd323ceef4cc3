#include "store_codec.hpp"

#include <caf/actor_system.hpp>

#include "pool/errors.hpp"

namespace pool::detail {

std::string detail_of(const caf::error& err) {
  auto& context = err.context();
  if (err.category() == pool_error_category && context.size() == 2 &&
      context.match_element<std::string>(1))
    return context.get_as<std::string>(1);
  return describe(err);
}

int64_t wall_offset(caf::actor_system& sys) {
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  auto wall = std::chrono::system_clock::now().time_since_epoch();
  // The actor system's clock is the one queue actors pass as `now`.
  auto actor = sys.clock().now().time_since_epoch();
  return duration_cast<nanoseconds>(wall).count() -
         duration_cast<nanoseconds>(actor).count();
}

} // namespace pool::detail
