#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <caf/response_promise.hpp>

namespace pool {

/// Who waits for the work submitted so far to end, without stopping the
/// pool (`(wait_idle)`, as `BS::thread_pool::wait()` but not held up by
/// later submits), and when the pool is idle. Every submit gets an intake
/// number, in order, when it arrives; it is pending from then until it
/// leaves: refused, answered with an existing operation's id (a unique
/// key), or accepted and then ended. A wait is answered once everything
/// pending when it came, and nothing later, has left. Plain value.
class idle_waits {
public:
  /// A submit arrives: its intake number.
  uint64_t arrive() noexcept {
    ++pending_;
    return ++intake_;
  }

  /// The submit or operation with intake number `intake` left (0: one
  /// that never arrived here, such as an operation of another shepherd:
  /// ignored). Returns whether the pool is idle now (nothing pending).
  bool leave(uint64_t intake) {
    if (intake == 0 || pending_ == 0)
      return false;
    --pending_;
    if (!waits_.empty()) // (The usual case: nobody waits.)
      count_down(intake);
    return pending_ == 0;
  }

  /// Whether a wait was answered since the last `take_done`.
  bool any_done() const noexcept {
    return !done_.empty();
  }

  /// Waits for what is pending now: answered at once (returns false) if
  /// nothing is; else kept.
  bool wait(caf::response_promise promise);

  /// The waits that are answered now (`leave` completed them).
  std::vector<caf::response_promise> take_done() {
    return std::move(done_);
  }

  /// Every wait still open (the pool terminates: they get its error).
  std::vector<caf::response_promise> take_all();

  size_t pending() const noexcept {
    return pending_;
  }

  size_t waiting() const noexcept {
    return waits_.size();
  }

private:
  /// The waits `intake` counted for, one down each.
  void count_down(uint64_t intake);

  struct wait_entry {
    /// The last intake number it waits for.
    uint64_t last;
    /// How many of those are still pending.
    size_t left;
    caf::response_promise promise;
  };

  uint64_t intake_ = 0;
  size_t pending_ = 0;
  std::vector<wait_entry> waits_;
  std::vector<caf::response_promise> done_;
};

} // namespace pool
