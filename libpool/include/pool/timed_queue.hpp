#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/actor_clock.hpp>

#include "pool/work_record.hpp"

namespace pool {

/// The in-memory queue of a store: entries become available at their due
/// time, never before, and come out by priority (higher first; see
/// `work_record::priority`), in order of (due time, insertion sequence)
/// within a priority. Within a priority, entries with a concurrency key
/// take turns by key (round-robin; the entries without a key are one more
/// turn), FIFO within each key. With `set_aging(step)`, an entry gains one
/// level of priority per `step` it has been due (it is compared by the
/// entry next in turn of each priority), so that no priority starves.
/// Due entries sit in one band per priority; delayed ones in a binary heap
/// ordered by (due, seq) that moves them to their band once due.
///
/// Shared by `memory_store` (it is the whole store) and `sqlite_store` (it
/// mirrors the file's queue, so reads never touch the file). Plain value,
/// not synchronized: used by one store at a time. Never blocks.
class timed_queue {
public:
  using time_point = caf::actor_clock::time_point;

  /// Adds `x`, due at `due`, with the next insertion sequence number.
  /// `now` is the caller's current time. Returns the sequence number used.
  uint64_t push(work_record x, time_point due, time_point now);

  /// Adds `records`, due at `now`, in order (moved from).
  void push_all(std::vector<work_record>& records, time_point now);

  /// Adds `x` with sequence number `seq` (as stored by a durable store);
  /// later pushes number after it. Entries due already move to the FIFO at
  /// the next call that knows the time, in (due, seq) order, ahead of
  /// anything pushed after them.
  void restore(work_record x, time_point due, uint64_t seq);

  /// Removes and returns the first entry due at `now`, if any.
  std::optional<work_record> pop_due(time_point now);

  /// Removes up to `n` entries due at `now`, in `pop_due` order, appended
  /// to `out`; returns how many.
  size_t pop_due_into(time_point now, size_t n, std::vector<work_record>& out);

  /// The due time of the earliest entry not yet due at `now`.
  std::optional<time_point> next_due(time_point now) {
    promote(now);
    if (delayed_.empty())
      return std::nullopt;
    return delayed_.front().due;
  }

  /// Removes every entry of `operation`; returns how many there were.
  /// Linear in the queue's size: cancellation is rare next to push and pop.
  size_t remove(uint64_t operation);

  /// Number of entries due at `now`.
  size_t available(time_point now) {
    promote(now);
    return ready_;
  }

  /// Number of entries not yet due at `now`.
  size_t delayed(time_point now) {
    promote(now);
    return delayed_.size();
  }

  /// Number of entries, due or not.
  size_t size() const noexcept {
    return ready_ + delayed_.size();
  }

  /// Drops every entry; sequence numbers keep counting.
  void clear() noexcept;

  /// The sequence number the next `push` uses.
  uint64_t next_seq() const noexcept {
    return seq_;
  }

  /// Lets waiting entries gain one priority level per `step` they have been
  /// due; none (the default) for strict priorities. `step` must be > 0.
  void set_aging(std::optional<caf::timespan> step) noexcept {
    aging_ = step;
  }

private:
  /// A due entry: its record without the priority and the concurrency key,
  /// which its band and its lane name (1,000,000 queued trivial entries
  /// took 291 B each through a pool with the whole record, 206 B before
  /// the record carried them).
  struct ready_entry {
    ready_entry(time_point since, work_record&& x)
        : since(since), operation(x.id.operation),
          payload(std::move(x.payload)), budget(x.budget),
          attempt(x.id.attempt), max_attempts(x.max_attempts) {
      // nop
    }

    /// The record again, in band `priority` and lane `key`.
    work_record take(int32_t priority, std::string key) &&;

    /// The record again, of band 0 and no key, at the end of `out`.
    void take_plain(std::vector<work_record>& out) &&;

    /// When it fell due (for aging).
    time_point since;
    // (The attempt_id's fields apart: 40 bytes instead of 48.)
    uint64_t operation;
    caf::message payload;
    caf::timespan budget;
    uint32_t attempt;
    uint32_t max_attempts;
  };

  using lane = std::deque<ready_entry>;

  /// The due entries of one priority: a FIFO per concurrency key (`plain`
  /// for none) and the keys in turn order (the empty key for `plain`).
  struct band {
    lane plain;
    std::unordered_map<std::string, lane> lanes;
    std::deque<std::string> turns;
    size_t size = 0;

    /// Appends `x` to the lane of `key` (the plain lane for "").
    void push(ready_entry x, std::string key);
    /// `push` of a plain entry (no key), built in place.
    void push_plain(time_point since, work_record&& x) {
      plain_lane().emplace_back(since, std::move(x));
    }
    /// The plain lane, counting the entry about to go in (and its turn).
    lane& plain_lane() {
      ++size;
      if (plain.empty())
        turns.emplace_back();
      return plain;
    }
    /// The next entry in turn, and its lane's key.
    std::pair<ready_entry, std::string> pop();
    /// The entry `pop` would return.
    const ready_entry& next() const;
    size_t remove(uint64_t operation);
  };

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

  /// Moves every delayed entry due at `now` to the FIFO, in order.
  void promote(time_point now) {
    if (!delayed_.empty() && delayed_.front().due <= now)
      promote_due(now);
  }

  void promote_due(time_point now);

  /// The band whose entry goes next at `now`.
  std::map<int32_t, band, std::greater<>>::iterator next_band(time_point now);

  /// Due entries by priority, highest first; no empty band but band 0.
  std::map<int32_t, band, std::greater<>> bands_;
  size_t ready_ = 0;
  std::vector<delayed_entry> delayed_;
  uint64_t seq_ = 0;
  std::optional<caf::timespan> aging_;
};

} // namespace pool
