#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>
#include <caf/response_promise.hpp>
#include <caf/timespan.hpp>

#include "pool/detail/operation_table.hpp"

namespace pool {

/// One submit on its way into the pool.
struct submission {
  caf::message payload;
  caf::timespan delay{0};
  /// `enqueue`: `promise` gets the operation id (for a durable store once
  /// the operation is on disk) and the outcome goes to `sender` as a
  /// message. `submit`: `promise` gets the outcome.
  bool tracked = false;
  /// With `tracked`: the outcome is `(op_result, id, Out)` (`enq_typed`),
  /// not `(op_done, id, message)`.
  bool typed = false;
  caf::strong_actor_ptr sender;
  caf::response_promise promise;
  /// Unique key; empty for none.
  std::string key;
  /// How long a finished operation's key still counts; none for the pool's
  /// `unique_window` (`enq_once`: forever).
  std::optional<caf::timespan> window;
  operation_policy policy;
  /// Concurrency key (`job_options`); empty for none.
  std::string concurrency_key;
  /// Counted in `submitted` already (it was parked or looked up first).
  bool counted = false;
  /// Its number in arrival order (`idle_waits`).
  uint64_t intake = 0;
};

/// Reads the head of a submit message into `sub` (which of `submit`,
/// `enqueue`, `sub_after`, `sub_with`, `enq_with`, `enq_unique`, `enq_once`
/// or `enq_typed` it is, and its delay, key and options) and returns how
/// many elements come before the payload; a malformed head or bad options
/// give `pool.unexpected_message` or `pool.invalid_option` naming the field.
caf::expected<size_t> read_submit_header(const caf::type_erased_tuple& content,
                                         submission& sub);

/// What happens to a submit now.
enum class admission_verdict {
  /// Accept it (or, with a key, look the key up first).
  accept,
  /// Keep it until there is room (`wait_when_full`).
  park,
  /// Refuse it: the queue is full and no more submits may wait.
  reject,
  /// Refuse it: the pool is draining.
  closed,
};

/// Who gets in: the capacity of the queue, the submits parked until there
/// is room (first in, first out: a new submit never overtakes a parked
/// one), the unique submits waiting for a durable store's answer about
/// their key (they count against the capacity), and the drain state (no
/// new submits). Plain value.
class admission {
public:
  /// `capacity`: most operations waiting for a worker (none: unbounded);
  /// `max_parked`: most submits kept while full.
  admission(std::optional<size_t> capacity, size_t max_parked);

  /// Decides on a new submit, given the operations now waiting.
  admission_verdict check(size_t waiting) const;

  /// Whether another operation fits, given the operations now waiting.
  bool has_room(size_t waiting) const;

  /// Keeps a submit until there is room.
  void park(submission sub);

  /// The oldest parked submit, if one fits now.
  std::optional<submission> unpark(size_t waiting);

  /// Every parked submit, oldest first (they leave the pool).
  std::deque<submission> take_parked();

  /// Whether a new submit is accepted at once (`check` says accept):
  /// nothing parked, the door open, room below the capacity.
  bool open(size_t waiting) const noexcept {
    return !closed_ && parked_.empty() &&
           (!capacity_ || waiting + looking_up_ < *capacity_);
  }

  size_t parked() const noexcept {
    return parked_count_; // (Twice per operation: a deque counts slowly.)
  }

  // -- unique keys waiting for the store
  // ---------------------------------------

  /// Whether `key` is being looked up; if so, `sub` waits with it.
  bool join_lookup(submission& sub);

  /// Starts a lookup of `sub.key`.
  void start_lookup(submission sub);

  /// The submits that waited for `key`, oldest first.
  std::vector<submission> end_lookup(const std::string& key);

  /// Every submit waiting for a lookup (they leave the pool).
  std::vector<submission> take_lookups();

  /// Submits waiting for a lookup.
  size_t looking_up() const noexcept {
    return looking_up_;
  }

  // -- draining
  // ----------------------------------------------------------------

  void close() noexcept {
    closed_ = true;
  }

  bool closed() const noexcept {
    return closed_;
  }

  std::optional<size_t> capacity() const noexcept {
    return capacity_;
  }

private:
  std::optional<size_t> capacity_;
  size_t max_parked_;
  std::deque<submission> parked_;
  size_t parked_count_ = 0;
  std::unordered_map<std::string, std::vector<submission>> lookups_;
  size_t looking_up_ = 0;
  bool closed_ = false;
};

} // namespace pool
