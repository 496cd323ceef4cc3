#include "pool/version.hpp"

namespace pool {

const char* version() noexcept {
  return POOL_VERSION;
}

} // namespace pool
