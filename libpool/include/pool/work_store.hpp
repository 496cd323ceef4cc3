#pragma once

#include <cstddef>
#include <optional>

#include <caf/actor_clock.hpp>
#include <caf/error.hpp>

#include "pool/work_record.hpp"

namespace pool {

/// The storage behind a queue actor. A store lives outside the queue actor
/// (shared through `std::shared_ptr`) so that a crashed queue actor can be
/// respawned over the same store without losing accepted work.
///
/// Ordering contract: entries become available at their due time and are
/// handed out in order of (due time, insertion order); an entry is never
/// handed out before it is due.
///
/// Thread safety: a store is used by one queue actor at a time; it is not
/// synchronized. Implementations never block for long (the in-memory store
/// never blocks at all).
class work_store {
public:
  using time_point = caf::actor_clock::time_point;

  virtual ~work_store();

  /// Adds `x`, due at `due`. `now` is the queue's current time. Returns an
  /// error when the entry could not be stored; then nothing was added.
  virtual caf::error push(work_record x, time_point due, time_point now) = 0;

  /// Removes and returns the first entry that is due at `now`, if any.
  virtual std::optional<work_record> pop_due(time_point now) = 0;

  /// Returns the due time of the earliest entry not yet due at `now`.
  virtual std::optional<time_point> next_due(time_point now) = 0;

  /// Removes every entry of `operation`; returns how many there were.
  virtual size_t remove(uint64_t operation) = 0;

  /// Number of entries due at `now`.
  virtual size_t available(time_point now) = 0;

  /// Number of entries not yet due at `now`.
  virtual size_t delayed(time_point now) = 0;
};

} // namespace pool
