#pragma once

#include <memory>

#include <caf/actor_addr.hpp>
#include <caf/behavior.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/timespan.hpp>

#include "pool/work_store.hpp"

namespace pool {

class queue_core;
class queue_effects;

/// State of a queue actor: its plain core (pool/detail/queue_core.hpp:
/// the answers, and for a durable store the group commit around them) over
/// a handle on the store, which outlives the actor so that a respawned
/// queue continues where a crashed one stopped.
struct queue_state {
  queue_state();
  ~queue_state();

  std::unique_ptr<queue_effects> fx;
  std::unique_ptr<queue_core> core;

  static inline const char* name = "pool.queue";
};

/// The queue actor. Fronts `store`; spoken to by the shepherd only:
/// - `(add_work, work_record, timespan delay[, std::string key])` ->
///   `queue_counts`
/// - `(get_work)` -> `work_record` | `(no_work, timespan wait)`
/// - and the private exchanges of pool/queue_protocol.hpp (`queue_msg`):
///   `(q_count)`, `(q_remove, op)`, `(q_finish, op, message | error)`,
///   `(q_note, op, attempt_failure)` -> `queue_counts`;
///   `(q_findkey, key, window)` -> `(q_keyfound, op)`;
///   `(q_record, op)` -> `operation_record`
/// Answers come in the order of the requests. A store error is returned to
/// the requester; the entry was not added.
///
/// With a durable store, changes are grouped: answers to changes are held
/// back until a `q_flush` (sent to itself behind whatever is in the
/// mailbox) has committed the group, so one transaction covers many
/// requests and an answer means "on disk". `get_work` is answered at once
/// (a hand-out need not be durable: at worst the work runs again), unless
/// it hands out an entry pushed in the open group: then it, and the
/// `get_work` answers after it, wait for the commit. Each kind of answer
/// (counts, work, key, record) stays in order. A new queue over a store
/// discards the changes a dead predecessor had not committed; the shepherd
/// sends the requests it has no answer for again.
///
/// `commit_interval` spaces commits out: a group is committed once the
/// mailbox holds nothing before its `q_flush`, but not sooner than
/// `commit_interval` after the previous commit, so that under load one
/// commit (one disk sync) covers many requests, while a lone request after
/// a quiet spell is committed at once.
///
/// A store with leases (`lease_interval`) has them renewed on time; lost
/// leases go to `owner` as `(q_lost, ops)`. A shared store wakes the queue
/// from its listener thread; what other stores did goes to `owner` as
/// `(q_news, work, finished, missed)` (a wake with no news is the store's
/// safety poll: it reads as `work`).
caf::behavior queue_actor(caf::stateful_actor<queue_state>* self,
                          std::shared_ptr<work_store> store,
                          caf::timespan commit_interval = caf::timespan{0},
                          caf::actor_addr owner = {});

} // namespace pool
