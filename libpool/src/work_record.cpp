#include "pool/work_record.hpp"

#include <fmt/format.h>

#include "pool/errors.hpp"

namespace pool {

std::string to_string(const attempt_id& x) {
  return "op#" + std::to_string(x.operation) + "/" + std::to_string(x.attempt);
}

std::string to_string(const attempt_failure& x) {
  return fmt::format("#{} at +{:.3f} ms: {}", x.attempt,
                     static_cast<double>(x.after_submit.count()) / 1e6,
                     describe(x.reason));
}

} // namespace pool
