#include "pool/batch_buffers.hpp"

#include <mutex>

namespace pool::batch_buffers {

namespace {

/// Below this size a block stays on malloc's fast path; above the other
/// bound, a vector is not kept (a burst must not pin its memory).
constexpr size_t min_bytes = 1024;
constexpr size_t max_bytes = 64 * 1024;
constexpr size_t max_kept = 64;

template <class T>
class stack {
public:
  std::vector<T> take(size_t room) {
    std::vector<T> result;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (!kept_.empty()) {
        result.swap(kept_.back());
        kept_.pop_back();
      }
    }
    result.reserve(room); // (Only allocates when the kept one is smaller.)
    return result;
  }

  void give(std::vector<T>&& x) {
    auto bytes = x.capacity() * sizeof(T);
    if (bytes < min_bytes || bytes > max_bytes)
      return; // (Freed with `x` by its owner.)
    x.clear();
    std::lock_guard<std::mutex> guard{mtx_};
    if (kept_.size() < max_kept)
      kept_.emplace_back().swap(x);
  }

private:
  std::mutex mtx_;
  std::vector<std::vector<T>> kept_;
};

/// Never destroyed: scheduler threads may still hand back a batch while
/// static objects are torn down at exit.
template <class T>
stack<T>& stack_of() {
  static auto* instance = new stack<T>;
  return *instance;
}

} // namespace

std::vector<work_record> records(size_t room) {
  return stack_of<work_record>().take(room);
}

void give(std::vector<work_record>&& x) {
  stack_of<work_record>().give(std::move(x));
}

std::vector<attempt_outcome> outcomes(size_t room) {
  return stack_of<attempt_outcome>().take(room);
}

void give(std::vector<attempt_outcome>&& x) {
  stack_of<attempt_outcome>().give(std::move(x));
}

} // namespace pool::batch_buffers
