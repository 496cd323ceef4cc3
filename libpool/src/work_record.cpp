#include "pool/work_record.hpp"

namespace pool {

std::string to_string(const attempt_id& x) {
  return "op#" + std::to_string(x.operation) + "/" + std::to_string(x.attempt);
}

} // namespace pool
