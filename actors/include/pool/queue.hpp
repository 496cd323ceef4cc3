#pragma once

#include <memory>

#include <caf/behavior.hpp>
#include <caf/stateful_actor.hpp>

#include "pool/work_store.hpp"

namespace pool {

/// State of a queue actor: only a handle on the store, which outlives the
/// actor so that a respawned queue continues where a crashed one stopped.
struct queue_state {
  std::shared_ptr<work_store> store;
  static inline const char* name = "pool.queue";
};

/// The queue actor. Fronts `store`; spoken to by the shepherd only:
/// - `(add_work, work_record, timespan delay)` -> `queue_counts`
/// - `(get_work)` -> `work_record` | `(no_work, timespan wait)`
/// - `(count_work)` -> `queue_counts`
/// - `(rm_work, uint64_t operation)` -> `queue_counts`
/// A store error is returned to the requester; the entry was not added.
caf::behavior queue_actor(caf::stateful_actor<queue_state>* self,
                          std::shared_ptr<work_store> store);

} // namespace pool
