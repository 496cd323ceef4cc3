#include "pool/memory_store.hpp"

#include <algorithm>

namespace pool {

work_store::~work_store() = default;

void memory_store::promote(time_point now) {
  while (!delayed_.empty() && delayed_.front().due <= now) {
    std::pop_heap(delayed_.begin(), delayed_.end(), later{});
    ready_.push_back(std::move(delayed_.back().record));
    delayed_.pop_back();
  }
}

caf::error memory_store::push(work_record x, time_point due, time_point now) {
  // Promote first so that entries that fell due earlier stay ahead of this
  // one: the FIFO remains ordered by due time.
  promote(now);
  if (due <= now) {
    ready_.push_back(std::move(x));
  } else {
    delayed_.push_back(delayed_entry{due, seq_++, std::move(x)});
    std::push_heap(delayed_.begin(), delayed_.end(), later{});
  }
  return caf::none;
}

std::optional<work_record> memory_store::pop_due(time_point now) {
  promote(now);
  if (ready_.empty())
    return std::nullopt;
  auto result = std::move(ready_.front());
  ready_.pop_front();
  return result;
}

std::optional<memory_store::time_point> memory_store::next_due(time_point now) {
  promote(now);
  if (delayed_.empty())
    return std::nullopt;
  return delayed_.front().due;
}

size_t memory_store::remove(uint64_t operation) {
  return detail::erase_operation(ready_, delayed_, operation, later{});
}

size_t memory_store::available(time_point now) {
  promote(now);
  return ready_.size();
}

size_t memory_store::delayed(time_point now) {
  promote(now);
  return delayed_.size();
}

} // namespace pool
