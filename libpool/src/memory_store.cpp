#include "pool/memory_store.hpp"

namespace pool {

work_store::~work_store() = default;

caf::error memory_store::push(work_record x, time_point due, time_point now) {
  queue_.push(std::move(x), due, now);
  return caf::none;
}

std::optional<work_record> memory_store::pop_due(time_point now) {
  return queue_.pop_due(now);
}

std::optional<memory_store::time_point> memory_store::next_due(time_point now) {
  return queue_.next_due(now);
}

size_t memory_store::remove(uint64_t operation) {
  return queue_.remove(operation);
}

size_t memory_store::available(time_point now) {
  return queue_.available(now);
}

size_t memory_store::delayed(time_point now) {
  return queue_.delayed(now);
}

} // namespace pool
