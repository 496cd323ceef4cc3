#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>
#include <caf/message_handler.hpp>
#include <caf/result.hpp>
#include <caf/timespan.hpp>

#include "pool/job_options.hpp"
#include "pool/work_record.hpp"
#include "pool/work_store.hpp"

namespace pool {

/// How the queue's decisions reach the world. Implemented by the queue
/// actor; the tests' simulator implements it without an actor system.
/// Called only from `queue_core`'s own calls.
class queue_effects {
public:
  using time_point = caf::actor_clock::time_point;

  virtual ~queue_effects();

  virtual time_point now() = 0;

  /// Holds back the answer to the request being handled (a response
  /// promise, in the actor): returns the ticket that `answer` takes later.
  virtual uint64_t hold() = 0;

  /// Answers the request held under `ticket` (once).
  virtual void answer(uint64_t ticket, caf::message msg) = 0;

  /// Sends `msg` to the queue itself after `delay` (zero: at once, behind
  /// whatever waits in its mailbox).
  virtual void to_self(caf::timespan delay, caf::message msg) = 0;

  /// Tells the shepherd what the store learned unasked (shared stores).
  virtual void to_owner(caf::message msg) = 0;
};

/// The queue's logic as a plain unit: the answers to the shepherd's
/// requests over a `work_store`, and, for a durable store, the group commit
/// around them (answers held until their group commits, released in order,
/// refused as the commit's outcome says) and the schedules of commits,
/// prunes, lease renewals and wakes. The queue actor (pool/queue.hpp) is
/// a thin adapter from messages to these calls; the protocol is documented
/// there, and `handlers` decodes it.
///
/// Each request call returns the answer, `caf::delegated` when it is held
/// back (the effects' `hold` made a ticket for it), or an error.
class queue_core {
public:
  using reply = caf::result<caf::message>;
  using time_point = caf::actor_clock::time_point;

  /// Commits that may fail in a row before held changes are refused (not
  /// for a shared store: it waits for its server).
  static constexpr int max_failed_commits = 5;

  /// Operations pruned per call; a full batch calls again soon.
  static constexpr size_t prune_batch = 1000;

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
    uint64_t ticket = 0;
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

  queue_core(std::shared_ptr<work_store> store, caf::timespan commit_interval,
             queue_effects& fx);

  /// Discards what a dead predecessor left uncommitted and arms the
  /// background schedules (prune, renew). Call once, first.
  void start();

  // -- requests -------------------------------------------------------------

  /// `(add_work, record, delay[, key[, opts]])` -> `queue_counts`.
  reply add(work_record& record, caf::timespan delay, std::string* key,
            job_options* opts);

  /// `(add_work, records)`: several entries due now, as one change.
  reply add_all(std::vector<work_record>& records);

  /// `(get_work[, n])`: up to `n` due entries (one `work_record` unless
  /// `many`), or `(no_work, wait)`.
  reply get(uint32_t n, bool many);

  /// `(q_remove, op)` -> `queue_counts`.
  reply remove(uint64_t operation);

  /// `(q_count)` -> `queue_counts`.
  reply count();

  /// `(q_finish, op, result | failure)` -> `queue_counts`.
  reply finish(uint64_t operation, caf::message& result);
  reply finish(uint64_t operation, caf::error& failure);

  /// `(q_note, op, failure)` -> `queue_counts`.
  reply note(uint64_t operation, attempt_failure& failure);

  /// `(q_forget, op)`: deletes an operation that failed for good (the
  /// dead set retried or discarded it) -> `queue_counts`.
  reply forget(uint64_t operation);

  /// `(q_findkey, key, window)` -> `(q_keyfound, op or 0)`.
  reply find_key(std::string& key, caf::timespan window);

  /// `(q_record, op)` -> `operation_record` (id 0: unknown).
  reply record(uint64_t operation);

  /// `(q_jobs, filter, dead_age)` -> `job_page` (a read).
  reply jobs(const job_filter& filter, caf::timespan dead_age);

  /// `(q_takeend, filter, limit, dead_age, discard)` -> `ended_taken` (a
  /// change).
  reply take_ended(const job_filter& filter, uint64_t limit,
                   caf::timespan dead_age, bool discard);

  // -- the queue's own messages ---------------------------------------------

  /// `(q_flush)`: commits the group and releases its answers.
  void flush();

  /// `(q_prune)`: prunes what outlived the retention; schedules the next.
  void prune();

  /// `(q_renew)`: renews leases, tells the owner the lost ones.
  void renew();

  /// `(q_wake)`: passes on what the store's listener brought.
  void wake();

  /// The queue's protocol as handlers calling the above (the queue
  /// actor's behavior; the tests' simulator invokes them on its own
  /// mailbox). The core must outlive them.
  caf::message_handler handlers();

  // -- observers ------------------------------------------------------------

  bool shared() const { return shared_; }

  const std::vector<held_answer>& held() const { return held_; }

  int failed_commits() const { return failed_commits_; }

private:
  caf::message counts(time_point now);

  /// Sends `q_flush` to itself: at once, or once `commit_interval` has
  /// passed since the last commit (and not sooner than `at_least`).
  void schedule_flush(caf::timespan at_least = {});

  reply answer(caf::message msg, answer_type type = answer_type::change,
               bool recount = false, std::optional<attempt_id> push = {},
               uint64_t operation = 0);

  reply refuse(caf::error err);

  void release(held_answer& x);

  void wait_for_server(std::vector<held_answer>& held,
                       const std::vector<attempt_id>& lost,
                       const caf::error& err);

  std::shared_ptr<work_store> store_;
  queue_effects& fx_;
  /// `store_->shared()` and `durable()`, read once: every call asks.
  bool shared_ = false;
  bool durable_ = false;
  caf::timespan commit_interval_{0};
  /// Commits that failed in a row.
  int failed_commits_ = 0;
  std::vector<held_answer> held_;
  /// A `q_flush` is in the mailbox.
  bool flush_scheduled_ = false;
  /// When the last group was committed, if any was.
  std::optional<time_point> last_commit_;
  /// Operations pushed in the open group: not handed out before it commits
  /// (so a durable submit is acknowledged before its work runs).
  std::unordered_set<uint64_t> uncommitted_;
  /// A `get_work` answer is held in the open group: later ones wait too,
  /// so that `get_work` answers stay in order.
  bool work_held_ = false;
};

} // namespace pool
