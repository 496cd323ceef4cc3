#pragma once

// A store that makes its queue actor crash: before delegating a call to an
// in-memory store it may throw, which kills the queue actor between two
// changes, as a crash at a random moment would. Nothing is half-done.

#include <functional>
#include <memory>
#include <stdexcept>

#include "pool/memory_store.hpp"

namespace pool::test {

class faulty_store final : public work_store {
public:
  /// `crash(call)` decides, for the n-th call (from 1), whether to throw.
  explicit faulty_store(std::function<bool(uint64_t)> crash)
      : crash_(std::move(crash)) {
    // nop
  }

  caf::error push(work_record x, time_point due, time_point now) override {
    maybe_crash();
    return inner_.push(std::move(x), due, now);
  }

  std::optional<work_record> pop_due(time_point now) override {
    maybe_crash();
    return inner_.pop_due(now);
  }

  std::optional<time_point> next_due(time_point now) override {
    return inner_.next_due(now);
  }

  size_t remove(uint64_t operation) override {
    return inner_.remove(operation);
  }

  size_t available(time_point now) override {
    return inner_.available(now);
  }

  size_t delayed(time_point now) override {
    return inner_.delayed(now);
  }

  uint64_t crashes() const {
    return crashes_;
  }

private:
  void maybe_crash() {
    if (crash_(++calls_)) {
      ++crashes_;
      throw std::runtime_error("injected queue crash");
    }
  }

  std::function<bool(uint64_t)> crash_;
  memory_store inner_;
  uint64_t calls_ = 0;
  uint64_t crashes_ = 0;
};

} // namespace pool::test
