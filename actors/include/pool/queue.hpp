#pragma once

#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/behavior.hpp>
#include <caf/message.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "pool/work_store.hpp"

namespace pool {

/// State of a queue actor: a handle on the store, which outlives the actor
/// so that a respawned queue continues where a crashed one stopped, and,
/// for a durable store, the answers held back until their group commits.
struct queue_state {
  std::shared_ptr<work_store> store;
  /// `store->shared()`, read once: every hand-out asks it.
  bool shared = false;

  /// What an answer confirms.
  enum class answer_type {
    /// A change (or its refusal): confirmed only by a successful commit.
    change,
    /// A hand-out: needs no durability, only its order.
    work,
    /// A read: needs no durability, only its order.
    read,
  };

  /// One answer waiting for the commit of its group.
  struct held_answer {
    caf::response_promise promise;
    caf::message answer;
    answer_type type = answer_type::change;
    /// The answer is `queue_counts`: computed again when released, so that
    /// it tells the counts of that moment.
    bool recount = false;
    /// Set for an `add_work`: refused if the commit lost its push.
    std::optional<attempt_id> push;
    /// The operation of an `add_work` or outcome: refused if the store
    /// fenced its change at the commit (`work_store::fenced`); 0 for none.
    uint64_t operation = 0;
  };

  /// Commits that failed in a row; after a few, held changes are refused.
  int failed_commits = 0;

  std::vector<held_answer> held;

  /// A `q_flush` is in the mailbox.
  bool flush_scheduled = false;

  caf::timespan commit_interval{0};

  /// When the last group was committed, if any was.
  std::optional<caf::actor_clock::time_point> last_commit;

  /// Operations pushed in the open group: not handed out before it commits
  /// (so a durable submit is acknowledged before its work runs).
  std::unordered_set<uint64_t> uncommitted;

  /// A `get_work` answer is held in the open group: later ones wait too,
  /// so that `get_work` answers stay in order.
  bool work_held = false;

  /// The shepherd, told what the store learns unasked (shared stores).
  caf::actor_addr owner;

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
