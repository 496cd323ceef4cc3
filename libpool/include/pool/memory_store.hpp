#pragma once

#include <deque>
#include <vector>

#include "pool/work_store.hpp"

namespace pool {

/// The default store: entries in memory, lost with the process.
/// Due entries sit in a FIFO; delayed ones in a binary heap ordered by
/// (due time, insertion sequence) and move to the FIFO once due.
class memory_store final : public work_store {
public:
  caf::error push(work_record x, time_point due, time_point now) override;

  std::optional<work_record> pop_due(time_point now) override;

  std::optional<time_point> next_due(time_point now) override;

  size_t remove(uint64_t operation) override;

  size_t available(time_point now) override;

  size_t delayed(time_point now) override;

private:
  struct delayed_entry {
    time_point due;
    uint64_t seq;
    work_record record;
  };

  /// Orders the heap so that its front is the earliest (due, seq).
  struct later {
    bool operator()(const delayed_entry& x,
                    const delayed_entry& y) const noexcept {
      return x.due != y.due ? x.due > y.due : x.seq > y.seq;
    }
  };

  /// Moves every delayed entry due at `now` to the ready FIFO, in order.
  void promote(time_point now);

  std::deque<work_record> ready_;
  std::vector<delayed_entry> delayed_;
  uint64_t seq_ = 0;
};

} // namespace pool
