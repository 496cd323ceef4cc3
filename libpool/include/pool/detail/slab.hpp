#pragma once

// The operation table's storage (pool/detail/operation_table.hpp): values
// at stable addresses in chunks, and a ring of indexes. Private.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace pool {

/// Values at stable addresses, in chunks of 64: indexing is a shift and a
/// mask (a `std::deque` of 80-byte operations divides by 6).
template <class T>
class chunked_slab {
public:
  T& operator[](uint32_t i) noexcept {
    return chunks_[i >> 6][i & 63];
  }

  const T& operator[](uint32_t i) const noexcept {
    return chunks_[i >> 6][i & 63];
  }

  uint32_t size() const noexcept {
    return size_;
  }

  /// Adds a default value; returns its index.
  uint32_t add() {
    if ((size_ & 63) == 0)
      chunks_.push_back(std::make_unique<T[]>(64));
    return size_++;
  }

private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  uint32_t size_ = 0;
};

/// Slot indexes by id offset: a ring buffer of a power-of-two capacity
/// (pushed at the back, popped at the front, indexed with a mask).
class index_ring {
public:
  size_t size() const noexcept {
    return size_;
  }

  bool empty() const noexcept {
    return size_ == 0;
  }

  uint32_t& operator[](size_t i) noexcept {
    return buf_[(head_ + i) & mask_];
  }

  uint32_t operator[](size_t i) const noexcept {
    return buf_[(head_ + i) & mask_];
  }

  uint32_t front() const noexcept {
    return buf_[head_];
  }

  void push_back(uint32_t x) {
    if (size_ == buf_.size())
      grow();
    buf_[(head_ + size_) & mask_] = x;
    ++size_;
  }

  void pop_front() noexcept {
    head_ = (head_ + 1) & mask_;
    --size_;
  }

  /// Grows to `n` entries, the new ones `fill`.
  void resize(size_t n, uint32_t fill) {
    while (size_ < n)
      push_back(fill);
  }

private:
  void grow() {
    std::vector<uint32_t> next(std::max<size_t>(64, buf_.size() * 2));
    for (size_t i = 0; i < size_; ++i)
      next[i] = (*this)[i];
    buf_.swap(next);
    head_ = 0;
    mask_ = buf_.size() - 1;
  }

  std::vector<uint32_t> buf_;
  size_t head_ = 0;
  size_t size_ = 0;
  size_t mask_ = 0;
};

} // namespace pool
