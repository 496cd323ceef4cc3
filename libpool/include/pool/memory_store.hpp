#pragma once

#include "pool/timed_queue.hpp"
#include "pool/work_store.hpp"

namespace pool {

/// The default store: entries in memory (a `timed_queue`), lost with the
/// process. Never blocks.
class memory_store final : public work_store {
public:
  caf::error push(work_record x, time_point due, time_point now) override;

  caf::error push_all(std::vector<work_record>& records,
                      time_point now) override;

  std::optional<work_record> pop_due(time_point now) override;

  size_t pop_due_into(time_point now, size_t n,
                      std::vector<work_record>& out) override;

  std::optional<time_point> next_due(time_point now) override;

  size_t remove(uint64_t operation) override;

  size_t available(time_point now) override;

  size_t delayed(time_point now) override;

  counts_at counts(time_point now) override;

  void set_priority_aging(std::optional<caf::timespan> step) override {
    queue_.set_aging(step);
  }

private:
  timed_queue queue_;
};

} // namespace pool
