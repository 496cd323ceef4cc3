#pragma once

// Stores for tests built on the in-memory store: `memory_backed_store`
// passes the queue's calls on to one (override what a test changes), and
// `faulty_store` makes its queue actor crash: before delegating a call it
// may throw, which kills the queue actor between two changes, as a crash
// at a random moment would. Nothing is half-done.

#include <functional>
#include <memory>
#include <stdexcept>

#include "pool/memory_store.hpp"

namespace pool::test {

class memory_backed_store : public work_store {
public:
  caf::error push(work_record x, time_point due, time_point now) override {
    return inner_.push(std::move(x), due, now);
  }

  std::optional<work_record> pop_due(time_point now) override {
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

private:
  memory_store inner_;
};

class faulty_store final : public memory_backed_store {
public:
  /// `crash(call)` decides, for the n-th call (from 1), whether to throw.
  explicit faulty_store(std::function<bool(uint64_t)> crash)
      : crash_(std::move(crash)) {
    // nop
  }

  caf::error push(work_record x, time_point due, time_point now) override {
    maybe_crash();
    return memory_backed_store::push(std::move(x), due, now);
  }

  std::optional<work_record> pop_due(time_point now) override {
    maybe_crash();
    return memory_backed_store::pop_due(now);
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
  uint64_t calls_ = 0;
  uint64_t crashes_ = 0;
};

} // namespace pool::test
