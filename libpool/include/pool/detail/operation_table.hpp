#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/actor_clock.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>
#include <caf/message_id.hpp>
#include <caf/response_promise.hpp>

#include "pool/job_options.hpp"
#include "pool/work_record.hpp"
#include "pool/detail/slab.hpp"
#include "pool/detail/worker_roster.hpp"

namespace pool {

/// Whom an operation's outcome goes to: a request's sender and its id (the
/// outcome is the response to that request). Two words, kept per queued
/// operation; a request that came through forwarding stages keeps its
/// whole promise in the extras instead.
struct reply_to {
  caf::strong_actor_ptr source;
  caf::message_id id;

  explicit operator bool() const noexcept {
    return static_cast<bool>(source);
  }
};

/// Per-operation settings that override the pool's (carried with the
/// operation; a zero field means "the pool's").
struct operation_policy {
  /// Attempts in total; 0 = the pool's `max_attempts`.
  uint32_t max_attempts = 0;
  /// Higher runs first (`job_options::priority`).
  int32_t priority = 0;
  /// How long one attempt may run; 0 = the pool's `attempt_timeout`.
  caf::timespan attempt_timeout{0};
};

/// The policy part of submit options.
inline operation_policy policy_of(const job_options& x) noexcept {
  return operation_policy{x.max_attempts(), x.priority(),
                          x.attempt_timeout()};
}

/// Where an accepted operation stands.
enum class operation_phase : uint8_t {
  /// Waiting for a worker: in the queue (due or delayed), taken out ahead,
  /// or about to be added.
  queued,
  /// Held by a worker (running, or later in the worker's batch).
  held,
};

/// One accepted operation, from submit until its caller got an outcome.
/// (The small fields come last, together, and an operation's own policy
/// lives in the table's side map: 80 bytes, where it was 104.)
struct operation {
  using time_point = caf::actor_clock::time_point;
  /// The input, kept for retries.
  caf::message payload;
  /// `submit`: the request answered with the outcome. `enqueue`
  /// (`tracked`): `caller.source` is sent `op_done` / `op_failed`. Empty for
  /// an operation adopted from a store.
  reply_to caller;
  /// The worker holding the current attempt while `held`.
  worker_ref holder;
  /// Its submit's number in arrival order (`idle_waits`); 0 for one of
  /// another shepherd.
  uint64_t intake = 0;
  time_point submitted_at;
  /// While waiting: when the current attempt is due. While held: when it
  /// was dispatched.
  time_point stamp;
  /// The attempt the shepherd currently waits for; replies for any other
  /// attempt are stale.
  uint32_t attempt = 1;
  bool tracked = false;
  /// With `tracked`: `op_result` with the result's elements (`enq_typed`).
  bool typed = false;
  operation_phase phase = operation_phase::queued;

  /// Whether a busy worker holds it in the batch sent ahead to it (not
  /// started).
  bool sent_ahead() const noexcept {
    return ahead_;
  }

private:
  friend class operation_table;
  /// Version of the current wait, for the delayed heap's lazy deletion.
  uint32_t wait_seq_ = 0;
  /// Counted in `available` (due), rather than in the delayed heap.
  bool due_counted_ = false;
  /// Waits again after a worker held it (a retry, or put back unstarted).
  bool returned_ = false;
  /// Held, but sent ahead to a busy worker: not started (see `send_ahead`).
  bool ahead_ = false;
  /// Has a policy of its own in the table's side map (most have none: the
  /// pool's settings apply, and the operation stays small).
  bool own_policy_ = false;
};

/// What only some operations carry.
struct operation_extras {
  std::vector<attempt_failure> history;
  /// Unique key (`enq_unique`); empty for none.
  std::string key;
  /// Concurrency key (`job_options::concurrency_key`); empty for none.
  std::string concurrency_key;
  /// The calling actor, watched only with `skip_orphaned`.
  caf::actor_addr caller;
  bool watched = false;
  /// The promise of a request that came through forwarding stages.
  caf::response_promise forwarded;
};

/// Every accepted operation of one pool: ids, the one staleness check
/// (`current`), the holders, the counts by phase (available and delayed by
/// due time, held), attempt histories, unique keys and the callers watched
/// for orphans. Plain value; not thread-safe.
class operation_table {
public:
  using time_point = caf::actor_clock::time_point;

  /// Accepts `op` (waiting, due at `op.stamp`) under a new id, with its
  /// own `policy` (all zero: the pool's).
  uint64_t add(operation op, time_point now,
               const operation_policy& policy = {});

  /// Accepts a plain operation (the pool's policy, no extras), due at
  /// `now`, its outcome for `caller`; returns its id.
  uint64_t add_plain(caf::message&& payload, reply_to&& caller, time_point now,
                     uint64_t intake);

  /// Accepts `op` under `id` (an operation adopted from a durable store);
  /// later ids follow the highest seen, unless `follow_ids` is false (an
  /// operation of another shepherd of a shared store, numbered in its own
  /// block).
  void adopt(uint64_t id, operation op, time_point now,
             const operation_policy& policy = {}, bool follow_ids = true);

  /// The policy of operation `id` (`op`): its own, or all zero for the
  /// pool's.
  operation_policy policy(uint64_t id, const operation& op) const;

  /// The next id `add` would give.
  uint64_t next_id() const noexcept {
    return next_id_;
  }

  void skip_ids_to(uint64_t next) noexcept {
    next_id_ = std::max(next_id_, next);
  }

  operation* find(uint64_t id) {
    auto index = index_of(id);
    return index != npos ? &slab_[index] : nullptr;
  }

  /// The operation if `id` names its current attempt; null if the
  /// operation ended or moved on (a reply for `id` is stale).
  operation* current(const attempt_id& id) {
    auto op = find(id.operation);
    return op != nullptr && op->attempt == id.attempt ? op : nullptr;
  }

  /// The operation waits again (for a retry, or put back unstarted), due at
  /// `due`, as attempt `attempt`.
  void wait(uint64_t id, uint32_t attempt, time_point due, time_point now);

  /// A worker holds the operation's current attempt from `now` on.
  void hold(uint64_t id, worker_ref worker, time_point now);

  /// As above, for `op`, found before as operation `id`.
  void hold(uint64_t id, operation& op, worker_ref worker, time_point now);

  /// A busy worker holds the operation's current attempt in the batch sent
  /// ahead to it: it counts as waiting, and keeps its due time as `stamp`,
  /// until `hold` (it starts), `wait` (it goes back) or `end`.
  void send_ahead(uint64_t id, operation& op, worker_ref worker);

  /// Removes the operation; returns it with its extras.
  struct ended {
    uint64_t id = 0;
    operation op;
    /// What only some operations carry (none for most).
    std::optional<operation_extras> extras;

    /// Whether the outcome goes to a promise kept in the extras (a request
    /// that came through forwarding stages).
    bool forwarded() const {
      return extras && extras->forwarded.pending();
    }
  };
  ended end(uint64_t id);

  // -- counts -----------------------------------------------------------------

  size_t size() const noexcept {
    return size_;
  }

  /// Operations held by workers, started (running or later in a batch the
  /// worker runs).
  size_t held() const noexcept {
    return held_ - ahead_;
  }

  /// Operations waiting for a worker (due or delayed, or sent ahead to a
  /// busy one).
  size_t waiting() const noexcept {
    return size_ - held();
  }

  /// Of those, the ones sent ahead.
  size_t sent_ahead() const noexcept {
    return ahead_;
  }

  /// Of those, the ones waiting again after a worker held them (retries,
  /// attempts put back unstarted): admitted before, never refused.
  size_t returned() const noexcept {
    return returned_;
  }

  /// Waiting operations due at `now`.
  size_t available(time_point now);

  /// The earliest due time of the operations waiting at `now` that are due
  /// (not handed ahead); none when none is. Linear in the table's size:
  /// for metrics, not for the hot path.
  std::optional<time_point> oldest_due(time_point now);

  /// Waiting operations not yet due at `now`.
  size_t delayed(time_point now) {
    return waiting() - available(now);
  }

  bool empty() const noexcept {
    return size_ == 0;
  }

  /// Slots of storage (operations and free slots): the table's high-water
  /// mark, for tests.
  size_t slots() const noexcept {
    return slab_.size();
  }

  /// Calls `f(id, op)` for every operation (young ones first, by id).
  template <class F>
  void for_each(F f) {
    for (size_t i = 0; i < ring_.size(); ++i)
      if (ring_[i] != npos)
        f(ring_base_ + i, slab_[ring_[i]]);
    for (auto& kvp : old_)
      f(kvp.first, slab_[kvp.second]);
  }

  /// Calls `f(id, op)` for the operations after id `after`, in id order,
  /// until `f` returns false or `budget` were visited; returns how many
  /// were. (For the jobs view: bounded work per page.)
  template <class F>
  size_t scan(uint64_t after, size_t budget, F f) {
    size_t visited = 0;
    if (!old_.empty()) { // the few long-lived ones, below the ring
      std::vector<uint64_t> old;
      for (auto& kvp : old_)
        if (kvp.first > after)
          old.push_back(kvp.first);
      std::sort(old.begin(), old.end());
      for (auto id : old)
        if (visited == budget || (++visited, !f(id, slab_[old_[id]])))
          return visited;
    }
    auto first = after < ring_base_ ? size_t{0} : after - ring_base_ + 1;
    for (size_t i = first; i < ring_.size(); ++i)
      if (ring_[i] != npos)
        if (visited == budget
            || (++visited, !f(ring_base_ + i, slab_[ring_[i]])))
          break;
    return visited;
  }

  /// The ids of every operation.
  std::vector<uint64_t> ids() const;

  // -- extras -----------------------------------------------------------------

  /// The extras of an operation, made on first use.
  operation_extras& extras_of(uint64_t id) {
    return extras_[id];
  }

  /// The extras of an operation, if it has any.
  operation_extras* find_extras(uint64_t id) {
    if (extras_.empty()) // the usual case: no hashing on the hot path
      return nullptr;
    auto i = extras_.find(id);
    return i != extras_.end() ? &i->second : nullptr;
  }

  /// Whether `op`'s queue entry is its payload alone (the pool's policy,
  /// no keys): most are.
  bool plain(const operation& op) const noexcept {
    return !op.own_policy_ && extras_.empty();
  }

  /// Appends `record_of(id, op)` to `out`, built in place for most.
  void append_record(std::vector<work_record>& out, const attempt_id& id,
                     const operation& op) {
    if (plain(op))
      out.emplace_back(id, op.payload);
    else
      out.push_back(own_record_of(id, op));
  }

  /// The queue entry of attempt `id` of `op`: its payload, priority and
  /// concurrency key.
  work_record record_of(const attempt_id& id, const operation& op) {
    if (plain(op))
      return work_record{id, op.payload}; // (Most: the pool's policy.)
    return own_record_of(id, op);
  }

  /// The options `op` was submitted with that a durable store keeps (its
  /// policy and concurrency key); none when all are the pool's.
  std::optional<job_options> options_of(uint64_t id, const operation& op);

  /// The operation's concurrency key; empty for none.
  const std::string& concurrency_key(uint64_t id);

  /// Operations of concurrency key `key` held by workers.
  size_t held_of(const std::string& key) const;

  /// The pending operation with unique key `key`, or 0.
  uint64_t find_key(const std::string& key) const;

  /// Gives the operation a unique key.
  void set_key(uint64_t id, std::string key);

  // -- callers watched for orphans --------------------------------------------

  /// Watches `caller` for `id`; returns true if it was not watched before
  /// (then the shepherd monitors it).
  bool watch(uint64_t id, const caf::actor_addr& caller);

  /// Notes that `caller` terminated.
  void caller_down(const caf::actor_addr& caller);

  /// Whether the operation's watched caller terminated.
  bool orphaned(uint64_t id);

  /// Live callers that no pending operation is watched for any more (their
  /// last one ended): the shepherd may stop monitoring them. Cleared by the
  /// call.
  std::vector<caf::actor_addr> unwatched();

private:
  void unwatch(const caf::actor_addr& caller);

  struct delayed_entry {
    time_point due;
    uint64_t id;
    uint32_t seq;
  };

  struct later {
    bool operator()(const delayed_entry& x,
                    const delayed_entry& y) const noexcept {
      return x.due > y.due;
    }
  };

  /// `record_of` for an operation with a policy or extras of its own.
  work_record own_record_of(const attempt_id& id, const operation& op);

  /// Counts the operation as waiting, due at `stamp`.
  void enter_wait(uint64_t id, operation& op, time_point now);

  /// Stops counting the operation as waiting.
  void leave_wait(operation& op);

  /// The operation is no longer one sent ahead (it started, went back or
  /// ended).
  void leave_ahead(operation& op);

  /// Drops stale entries from the delayed heap.
  void compact();

  /// Counts a held operation of a concurrency key (`delta` 1) or one that
  /// is no longer held (-1).
  void count_key(uint64_t id, int delta) {
    if (!extras_.empty()) // (Only an operation with extras has a key.)
      count_own_key(id, delta);
  }

  void count_own_key(uint64_t id, int delta);

  static constexpr uint32_t npos = ~uint32_t{0};

  /// Stores `op` in a free slot of the slab; returns the slot.
  uint32_t store(operation op);

  /// The slot of operation `id`, or `npos`.
  uint32_t index_of(uint64_t id) const {
    if (id - ring_base_ < ring_.size()) // (unsigned: below the base wraps)
      return ring_[id - ring_base_];
    if (old_.empty())
      return npos;
    auto i = old_.find(id);
    return i != old_.end() ? i->second : npos;
  }

  /// Files slot `index` under `id`: in the ring if `id` comes next there.
  void file(uint64_t id, uint32_t index);

  /// Moves the oldest ring entries to `old_` while the ring is sparse (one
  /// long operation must not keep every later id's entry alive).
  void trim_ring();

  /// Operations, at stable addresses, and the free slots. Ids map to
  /// slots: the young ones, numbered in order, through `ring_`
  /// (`ring_[id - ring_base_]`, `npos` once ended, no hashing); the rest
  /// (adopted ones, or old ones from a sparse ring) through `old_`.
  chunked_slab<operation> slab_;
  std::vector<uint32_t> free_;
  index_ring ring_;
  uint64_t ring_base_ = 1;
  size_t ring_live_ = 0;
  std::unordered_map<uint64_t, uint32_t> old_;
  size_t size_ = 0;
  std::unordered_map<uint64_t, operation_extras> extras_;
  /// The policies of operations with one of their own (`own_policy_`).
  std::unordered_map<uint64_t, operation_policy> policies_;
  std::unordered_map<std::string, uint64_t> keys_;
  /// Held operations per concurrency key (none: 0).
  std::unordered_map<std::string, int64_t> held_keys_;
  struct caller_watch {
    size_t pending = 0;
    bool down = false;
    caf::actor_addr addr;
  };
  /// By the caller's control block (its address may be empty in tests).
  std::unordered_map<const void*, caller_watch> callers_;
  std::vector<caf::actor_addr> unwatched_;
  /// Delayed waiting operations by due time (lazily deleted).
  std::vector<delayed_entry> delayed_;
  size_t due_ = 0;
  size_t held_ = 0;
  size_t returned_ = 0;
  /// Of the held operations, those sent ahead.
  size_t ahead_ = 0;
  uint64_t next_id_ = 1;
};

} // namespace pool
