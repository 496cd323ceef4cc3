#include "pool/timed_queue.hpp"

#include <algorithm>

namespace pool {

void timed_queue::promote(time_point now) {
  while (!delayed_.empty() && delayed_.front().due <= now) {
    std::pop_heap(delayed_.begin(), delayed_.end(), later{});
    ready_.push_back(std::move(delayed_.back().record));
    delayed_.pop_back();
  }
}

uint64_t timed_queue::push(work_record x, time_point due, time_point now) {
  // Promote first so that entries that fell due earlier stay ahead of this
  // one: the FIFO remains ordered by due time.
  promote(now);
  auto seq = seq_++;
  if (due <= now) {
    ready_.push_back(std::move(x));
  } else {
    delayed_.push_back(delayed_entry{due, seq, std::move(x)});
    std::push_heap(delayed_.begin(), delayed_.end(), later{});
  }
  return seq;
}

void timed_queue::restore(work_record x, time_point due, uint64_t seq) {
  // Through the heap even when due: the next promote puts it in (due, seq)
  // order among the other restored entries.
  delayed_.push_back(delayed_entry{due, seq, std::move(x)});
  std::push_heap(delayed_.begin(), delayed_.end(), later{});
  seq_ = std::max(seq_, seq + 1);
}

std::optional<work_record> timed_queue::pop_due(time_point now) {
  promote(now);
  if (ready_.empty())
    return std::nullopt;
  auto result = std::move(ready_.front());
  ready_.pop_front();
  return result;
}

std::optional<timed_queue::time_point> timed_queue::next_due(time_point now) {
  promote(now);
  if (delayed_.empty())
    return std::nullopt;
  return delayed_.front().due;
}

size_t timed_queue::remove(uint64_t operation) {
  auto before = size();
  ready_.erase(std::remove_if(ready_.begin(), ready_.end(),
                              [operation](const work_record& x) {
                                return x.id.operation == operation;
                              }),
               ready_.end());
  auto removed_delayed = std::remove_if(
      delayed_.begin(), delayed_.end(), [operation](const delayed_entry& x) {
        return x.record.id.operation == operation;
      });
  if (removed_delayed != delayed_.end()) {
    delayed_.erase(removed_delayed, delayed_.end());
    std::make_heap(delayed_.begin(), delayed_.end(), later{});
  }
  return before - size();
}

size_t timed_queue::available(time_point now) {
  promote(now);
  return ready_.size();
}

size_t timed_queue::delayed(time_point now) {
  promote(now);
  return delayed_.size();
}

void timed_queue::clear() noexcept {
  ready_.clear();
  delayed_.clear();
}

} // namespace pool
