#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

#include "pool/batch_buffers.hpp"
#include "pool/work_record.hpp"

namespace pool {

/// Entries the dispatcher took out of the queue ahead of the workers that
/// will run them, oldest first. A batch from the queue is taken over whole
/// while nothing else is ready, and handed on whole when a worker takes
/// all of it: most entries are never moved one by one (each move of a
/// `work_record` is a `caf::message` handle and a string). Plain value.
class ready_list {
public:
  using batch = std::vector<work_record>;

  bool empty() const noexcept {
    return head_ == items_.size();
  }

  size_t size() const noexcept {
    return items_.size() - head_;
  }

  /// Appends one entry.
  void push_back(work_record&& x) {
    compact();
    items_.push_back(std::move(x));
  }

  /// Appends a batch in order; taken over whole when none is ready.
  void append(batch&& xs) {
    if (empty()) {
      batch_buffers::give(std::move(items_));
      items_ = std::move(xs);
      head_ = 0;
      return;
    }
    compact();
    items_.insert(items_.end(), std::make_move_iterator(xs.begin()),
                  std::make_move_iterator(xs.end()));
    batch_buffers::give(std::move(xs));
  }

  /// Puts a batch back in front of everything ready, in order.
  void push_front(batch&& xs) {
    if (xs.empty())
      return;
    if (empty()) {
      append(std::move(xs));
      return;
    }
    items_.insert(items_.begin() + static_cast<ptrdiff_t>(head_),
                  std::make_move_iterator(xs.begin()),
                  std::make_move_iterator(xs.end()));
  }

  /// Takes the oldest `n` entries (all if fewer are ready).
  batch take(size_t n) {
    n = std::min(n, size());
    if (head_ == 0 && n == items_.size()) {
      batch result;
      result.swap(items_);
      return result;
    }
    auto result = batch_buffers::records(n);
    auto first = items_.begin() + static_cast<ptrdiff_t>(head_);
    result.insert(result.end(), std::make_move_iterator(first),
                  std::make_move_iterator(first + static_cast<ptrdiff_t>(n)));
    head_ += n;
    if (empty()) {
      items_.clear();
      head_ = 0;
    }
    return result;
  }

  /// Drops every ready entry for which `pred` holds.
  template <class Predicate>
  void remove_if(Predicate pred) {
    auto first = items_.begin() + static_cast<ptrdiff_t>(head_);
    items_.erase(std::remove_if(first, items_.end(), pred), items_.end());
    if (empty()) {
      items_.clear();
      head_ = 0;
    }
  }

private:
  /// Drops the taken front once it is most of the buffer.
  void compact() {
    if (head_ > 0 && head_ * 2 >= items_.size()) {
      items_.erase(items_.begin(),
                   items_.begin() + static_cast<ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  batch items_;
  /// Entries before this index were taken (moved from).
  size_t head_ = 0;
};

} // namespace pool
