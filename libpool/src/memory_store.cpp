#include "pool/memory_store.hpp"

namespace pool {

work_store::~work_store() = default;

work_store::counts_at work_store::counts(time_point now) {
  return counts_at{available(now), delayed(now), next_due(now)};
}

work_store::counts_at memory_store::counts(time_point now) {
  return counts_at{queue_.available(now), queue_.delayed(now),
                   queue_.next_due(now)};
}

caf::error work_store::push_all(std::vector<work_record>& records,
                                time_point now) {
  for (auto& record : records)
    if (auto err = push(std::move(record), now, now))
      return err;
  return caf::none;
}

caf::error memory_store::push_all(std::vector<work_record>& records,
                                  time_point now) {
  queue_.push_all(records, now);
  return caf::none;
}

size_t work_store::pop_due_into(time_point now, size_t n,
                                std::vector<work_record>& out) {
  size_t got = 0;
  for (; got < n; ++got) {
    auto record = pop_due(now);
    if (!record)
      break;
    out.push_back(std::move(*record));
  }
  return got;
}

size_t memory_store::pop_due_into(time_point now, size_t n,
                                  std::vector<work_record>& out) {
  return queue_.pop_due_into(now, n, out);
}

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
