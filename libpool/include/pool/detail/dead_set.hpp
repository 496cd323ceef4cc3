#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/message.hpp>
#include <caf/timespan.hpp>

#include "pool/detail/operation_table.hpp"
#include "pool/jobs.hpp"
#include "pool/work_record.hpp"

namespace pool {

/// An operation that failed for good, kept for an operator to retry or
/// discard (Sidekiq's dead set, Oban's discarded jobs).
struct dead_job {
  using time_point = caf::actor_clock::time_point;
  uint64_t id = 0;
  /// How it ended: `failed` (the dead set proper), `cancelled` or
  /// `stopped` (kept beside them under the same bounds).
  job_state state = job_state::failed;
  /// The attempt it was on when it ended (1 for the first).
  uint32_t attempt = 1;
  /// The input, as submitted: a retry submits it again.
  caf::message payload;
  /// Every failed attempt, oldest first (the last one ended it).
  std::vector<attempt_failure> history;
  /// Its unique key and concurrency key; empty for none.
  std::string key;
  std::string concurrency_key;
  /// The settings it was submitted with (a retry keeps them).
  operation_policy policy;
  time_point submitted_at;
  time_point failed_at;
};

/// The dead set: operations that failed for good, with their inputs and
/// attempt histories, bounded by count (the oldest failure goes first) and
/// by age (a failure older than `max_age` goes at the next add or read).
/// Cancelled and drain-stopped operations are kept in it too (their state
/// says so), and a note of each discarded one, so that a status query
/// still says how it ended; the notes have the same bounds (each a few
/// words). Touched only when an operation fails for good, is cancelled or
/// stopped, and by the operators' reads and actions, never on a
/// successful operation's way. Plain value; not thread-safe.
class dead_set {
public:
  using time_point = caf::actor_clock::time_point;

  /// At most `max_jobs`, none older than `max_age`; 0 for either: off
  /// (nothing is kept).
  dead_set(size_t max_jobs, caf::timespan max_age);

  /// Whether failures are kept at all.
  bool enabled() const noexcept {
    return max_jobs_ > 0 && max_age_ > caf::timespan::zero();
  }

  /// Keeps `x` (failed at `x.failed_at`), then drops what is beyond the
  /// bounds at `now`. Ignored when off.
  void add(dead_job x, time_point now);

  /// Drops the failures older than `max_age` at `now`.
  void expire(time_point now);

  /// The job with id `id`, or null.
  const dead_job* find(uint64_t id) const;

  /// Removes and returns the job with id `id`.
  std::optional<dead_job> take(uint64_t id);

  /// Removes the job with id `id` for good and notes that it was
  /// discarded at `now` (see `discarded`); false if it is not kept.
  bool discard(uint64_t id, time_point now);

  /// Whether the job with id `id` was discarded (within the bounds: the
  /// last `max_jobs` discards, none older than `max_age`).
  bool discarded(uint64_t id) const {
    return discarded_ids_.count(id) > 0;
  }

  /// Jobs kept, every state.
  size_t size() const noexcept {
    return by_id_.size();
  }

  /// Jobs kept in state `x`.
  size_t size(job_state x) const noexcept {
    return x == job_state::cancelled  ? cancelled_
           : x == job_state::stopped ? stopped_
                                      : by_id_.size() - cancelled_ - stopped_;
  }

  /// Discard notes kept.
  size_t discards() const noexcept {
    return discarded_ids_.size();
  }

  /// Jobs dropped by the bounds since the start.
  uint64_t dropped() const noexcept {
    return dropped_;
  }

  size_t max_jobs() const noexcept {
    return max_jobs_;
  }

  caf::timespan max_age() const noexcept {
    return max_age_;
  }

  /// Calls `f(job)` for the jobs with an id above `after`, in id order,
  /// until it returns false or `budget` jobs were looked at; returns how
  /// many were.
  template <class F>
  uint64_t scan(uint64_t after, uint64_t budget, F f) const {
    uint64_t n = 0;
    for (auto i = by_id_.upper_bound(after); i != by_id_.end() && n < budget;
         ++i) {
      ++n;
      if (!f(i->second))
        break;
    }
    return n;
  }

  /// The highest id kept; 0 when empty.
  uint64_t last_id() const noexcept {
    return by_id_.empty() ? 0 : by_id_.rbegin()->first;
  }

private:
  void drop_oldest();

  void erase(std::map<uint64_t, dead_job>::iterator i);

  size_t& count_of(job_state x) {
    return x == job_state::cancelled ? cancelled_ : stopped_;
  }

  size_t max_jobs_;
  caf::timespan max_age_;
  std::map<uint64_t, dead_job> by_id_;
  /// (failed_at, id), oldest first: what the bounds drop.
  std::set<std::pair<time_point, uint64_t>> by_age_;
  uint64_t dropped_ = 0;
  /// Of `by_id_`, how many were cancelled and stopped.
  size_t cancelled_ = 0;
  size_t stopped_ = 0;
  /// The discarded ones' ids, and (discarded at, id) in discard order.
  std::set<uint64_t> discarded_ids_;
  std::deque<std::pair<time_point, uint64_t>> discard_order_;
};

} // namespace pool
