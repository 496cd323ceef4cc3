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

prepared_reply::prepared_reply(const prepared_reply& other) {
  *this = other;
}

prepared_reply& prepared_reply::operator=(const prepared_reply& other) {
  if (this != &other)
    element_ = other.element_ ? caf::make_mailbox_element(
                                  nullptr, caf::make_message_id(), {},
                                  other.element_->copy_content_to_message())
                              : nullptr;
  return *this;
}

caf::message prepared_reply::take_message() {
  if (!element_)
    return {};
  auto result = element_->move_content_to_message();
  element_.reset();
  return result;
}

} // namespace pool
