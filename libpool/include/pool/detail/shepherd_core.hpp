#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/message.hpp>
#include <caf/response_promise.hpp>

#include "pool/detail/admission.hpp"
#include "pool/detail/dead_set.hpp"
#include "pool/detail/dispatcher.hpp"
#include "pool/detail/idle_waits.hpp"
#include "pool/detail/monitors.hpp"
#include "pool/detail/operation_table.hpp"
#include "pool/detail/queue_link.hpp"
#include "pool/detail/shepherd_effects.hpp"
#include "pool/detail/supervision.hpp"
#include "pool/detail/worker_roster.hpp"
#include "pool/errors.hpp"
#include "pool/flow_gate.hpp"
#include "pool/jobs.hpp"
#include "pool/operation_record.hpp"
#include "pool/options.hpp"
#include "pool/stats.hpp"
#include "pool/work_store.hpp"

namespace pool {

/// The shepherd's state and decisions, without an actor: the thin shepherd
/// actor turns each message into one call here, and every effect (a send, a
/// spawn, a timer, an answer) goes out through `shepherd_effects`, as CAF's
/// `basp::instance` sits behind its `basp_broker`. Owns the units (roster,
/// operation table, queue link, admission, supervision, monitors,
/// dispatcher) and fans their lifecycle hooks out: an operation accepted or
/// ended, a worker gone. docs/design.md walks through it. Not thread-safe;
/// called from the shepherd's handlers only.
class shepherd_core final : private dispatch_host {
public:
  using time_point = caf::actor_clock::time_point;

  /// `durable`: the store keeps outcomes (they are recorded through the
  /// queue) and counts may lag commits.
  shepherd_core(pool_options opts, bool durable, shepherd_effects& fx);

  ~shepherd_core() override;

  /// Adopts what a durable store holds from an earlier run. Call before the
  /// queue actor touches the store.
  void adopt(work_store& store);

  /// Spawns the workers (the queue actor exists by now).
  void start();

  // -- callers ----------------------------------------------------------------

  /// A submit (its promise made for the request): accepted, parked, looked
  /// up by key, or refused; every path answers the promise exactly once.
  void submit(submission sub);

  /// Whether a plain submit (no options, no key, no delay, a request
  /// answered with the outcome) would be accepted at once as it is: then
  /// `submit_plain` takes it, else `submit` (the slow path).
  bool takes_plain() const noexcept {
    return !durable_ && !watch_callers_ && adm_.open(table_.waiting());
  }

  /// Accepts a plain submit that `takes_plain`: its outcome answers
  /// `caller` (nobody when empty).
  void submit_plain(reply_to&& caller, caf::message&& payload);

  /// The pool's figures now (answered by the shepherd itself).
  pool_stats stats();

  /// The caller expects `n` operations in all (`exp_total`; 0 clears).
  void expect_total(uint64_t n) noexcept {
    expected_total_ = n;
  }

  /// A page of the jobs view (`list_jobs`): operations by state, in id
  /// order, looking at most at `job_scan_budget` of them.
  caf::expected<job_page> jobs(const job_filter& filter);

  /// `(retry_jobs, filter)`: the failed jobs matching `filter` go through
  /// `submit` again as new operations and leave the dead set
  /// (shepherd_core_dead.cpp).
  caf::expected<jobs_acted> retry_dead(const job_filter& filter);

  /// `(disc_jobs, filter)`: the failed jobs matching `filter` leave the
  /// dead set (and a durable store) for good.
  caf::expected<jobs_acted> discard_dead(const job_filter& filter);

  // -- the jobs view over a shared store (shepherd_core_jobs.cpp) -----------
  //
  // With other shepherds on the store's queue, the actor asks the queue
  // (`q_jobs`, `q_takeend`) instead of calling `jobs`, `retry_dead` and
  // `discard_dead`, and finishes here.

  /// Whether the jobs view, retries and discards go to the store: other
  /// shepherds share its queue (`work_store::shared`).
  bool jobs_from_store() const noexcept {
    return shared_;
  }

  /// How long ago an ended job may have ended to be listed (the dead set's
  /// age bound; zero when the dead set is off).
  caf::timespan dead_age() const noexcept {
    return dead_.enabled() ? dead_.max_age() : caf::timespan::zero();
  }

  /// The store's page: this process's running jobs get their worker and
  /// the time since their attempt began.
  void own_part(job_page& page);

  /// Why `filter` cannot list a page (`invalid_option`); none if it can.
  static caf::error jobs_filter_error(const job_filter& filter);

  /// The most a retry (or, `discard`, a discard) may take out of the store
  /// now: for a retry the room the queue has; or why it may take none (a
  /// bad filter, draining).
  caf::expected<uint64_t> take_limit(const job_filter& filter, bool discard);

  /// The jobs the store gave for a retry go through `submit` as new
  /// operations (shepherd_core_dead.cpp).
  jobs_acted retry_taken(ended_taken& taken);

  /// The jobs the store marked discarded leave this process's dead set.
  jobs_acted discard_taken(const ended_taken& taken);

  /// The dead set (for tests: its size stays within its bound).
  const dead_set& dead() const noexcept {
    return dead_;
  }

  /// The snapshot with histogram counters (`(pool_metrics)`).
  pool_metrics metrics();

  /// `(op_status, id)`: the record, from memory while pending, else (durable
  /// stores) through the queue.
  void op_status(uint64_t id, caf::response_promise promise);

  caf::error cancel(uint64_t id);

  /// Grows or shrinks the pool; the answer (or the error) goes out once it
  /// has that size.
  void resize(uint64_t n, caf::response_promise promise);

  /// Stops accepting; answers (and stops the shepherd) once nothing is
  /// pending; with a deadline, fails what is left when it passes.
  void drain(std::optional<caf::timespan> deadline,
             caf::response_promise promise);

  /// Holds every attempt back until `resume` (queued work stays, running
  /// attempts finish, submits are still accepted).
  void pause();

  void resume();

  /// Answers `promise` once every submit that arrived before it has
  /// ended (the pool keeps running).
  void wait_idle(caf::response_promise promise);

  /// Adds an actor speaking the worker protocol.
  caf::error join(worker_handle worker);

  // -- workers ----------------------------------------------------------------

  void give_work(const void* key);

  void status(const void* key, const attempt_id& id, caf::message* result,
              caf::error* failure);

  /// A batch's outcomes; `ran`: how long its jobs ran, as the worker
  /// measured it (none: the time since the batch started here).
  void status(const void* key, std::vector<attempt_outcome>& outcomes,
              std::optional<caf::timespan> ran);

  /// A cooperative worker of this pool says its job ran `ran`, over the
  /// slow-job threshold. From anyone else it counts as stale.
  void slow_job(const void* key, caf::timespan ran);

  /// A monitored actor terminated: a worker (replaced if local), a watched
  /// caller. Returns true if it was one of them.
  bool down(const caf::actor_addr& who, const void* key,
            const caf::error& reason);

  // -- the queue --------------------------------------------------------------

  void on_counts(const queue_counts& counts);

  void on_work(std::vector<work_record> records);

  void on_no_work(caf::timespan wait);

  void on_key_found(uint64_t found);

  void on_record(operation_record& rec);

  void on_queue_error(caf::error& err);
  // -- a shared store (shepherd_core_shared.cpp) ------------------------------
  /// `(q_lost, ops)`: another store took these attempts back; they are
  /// stale here, and their operations run elsewhere.
  void leases_lost(const std::vector<uint64_t>& ops);
  /// `(q_news, ...)`: work may be due; operations finished elsewhere;
  /// notifications may have been lost.
  void store_news(bool work, const std::vector<uint64_t>& finished,
                  bool missed);

  /// The queue actor died: returns false if restarts exceed the intensity
  /// (the shepherd quits); else the caller spawned a new one, and what was
  /// pending is sent again.
  bool queue_lost(const caf::error& reason);

  /// The new queue actor is there: what was pending goes to it again.
  void queue_restarted();

  // -- time -------------------------------------------------------------------

  void timer(const timer_event& ev);

  // -- lifetime ---------------------------------------------------------------

  /// The shepherd terminates with `reason`: every pending caller is told
  /// once; the pool's own workers are stopped.
  void terminate(const caf::error& reason);

  /// Whether a caller waits for a response (the shepherd stays alive).
  bool promised() const noexcept {
    return promised_ > 0;
  }

  /// Why the core made the shepherd quit, if it did.
  const caf::error& quit_reason() const noexcept {
    return quit_reason_;
  }

  // -- units, for tests and the actor -----------------------------------------

  const worker_roster& roster() const noexcept {
    return roster_;
  }

  operation_table& table() noexcept {
    return table_;
  }

  const pool_options& options() const noexcept {
    return opts_;
  }

private:
  // -- dispatch_host ----------------------------------------------------------

  void orphaned(uint64_t id) override;

  void room_changed() override;

  void woke_joined(worker_ref worker) override;

  // -- intake (shepherd_core_intake.cpp) --------------------------------------

  void refuse(submission& sub, caf::error err);

  void answer_id(submission& sub, uint64_t id);

  uint64_t accept(submission sub);

  void submit_unique(submission sub);

  void admit_parked();

  // -- a shared store (shepherd_core_shared.cpp) ------------------------------
  /// Adopts handed-out entries of operations another shepherd accepted, and
  /// follows attempts that moved on elsewhere.
  void take_shared(std::vector<work_record>& records);
  /// The operation's attempt moved on elsewhere: it waits for its outcome
  /// if a caller here waits, else it is forgotten.
  void moved_elsewhere(uint64_t id, uint32_t attempt);
  /// Asks the store for the outcome of an operation run elsewhere.
  void look_up_outcome(uint64_t id);
  /// Settles operation `id`, run elsewhere, with the store's record of it
  /// (id 0: pruned before it was read).
  void settle_from(uint64_t id, operation_record& rec);
  /// Handles what only a shared store refuses (`key_taken`, `lease_lost`);
  /// returns false for any other refusal.
  bool shared_refusal(pending_exchange::kind& ex, const caf::error& err);
  // -- workers (shepherd_core_workers.cpp) ------------------------------------

  worker_ref add_worker(worker_handle who, bool joined);

  bool replace_worker(bool counts_as_restart, const caf::error& cause);

  /// Sets the size and starts resizing (no promise).
  caf::error grow_or_shrink(uint64_t n);

  void resize_step();

  void check_resized();

  void retire(worker_ref worker);

  void done_holding(worker_ref worker, worker_slot& slot);

  void worker_lost(worker_ref worker, caf::error reason,
                   bool counts_as_restart);

  void on_attempt_timeout(const attempt_id& id, worker_ref worker);

  /// A joined worker is waiting: drop it if it stays silent.
  void arm_probe(worker_ref worker);

  void probe_joined(worker_ref worker);

  /// Restarts exceeded the intensity: the shepherd quits.
  void give_up(const caf::error& last_cause);

  // -- the dead set (shepherd_core_dead.cpp) ----------------------------------

  /// Operation `id` fails for good (or, `state`, is cancelled or stopped
  /// by a drain's deadline): it joins the dead set (when kept).
  void keep_dead(uint64_t id, const operation& op,
                 const std::vector<attempt_failure>& history,
                 job_state state = job_state::failed);

  /// Operation `id`, still in the table, is cancelled or stopped: it is
  /// kept in the dead set in that state (when kept).
  void keep_ended(uint64_t id, job_state state);

  /// `op_status` of an operation that left the table: answers `promise`
  /// from the dead set (failed, cancelled, stopped) or its discard notes
  /// and returns true; false if they do not know it.
  bool status_of_ended(uint64_t id, caf::response_promise& promise);

  /// The failed jobs a durable store kept from an earlier run.
  void adopt_dead(work_store& store);

  /// The dead set's failed jobs now (what outlived its age not counted).
  uint64_t dead_count() {
    dead_.expire(now());
    return dead_.size(job_state::failed);
  }

  /// A retry of a dead job as a new operation's submit.
  static submission retry_of(caf::message payload,
                             const operation_policy& policy, std::string key,
                             std::string ckey);
  /// The id of the operation a retry's submit made, given the table's next
  /// id before it; 0 when none yet.
  uint64_t new_id_since(uint64_t next, const std::string& key);
  /// What a retry says to the operator.
  void note_retried(jobs_acted& result);
  /// The ids of the failed jobs matching `filter`, in id order.
  std::vector<uint64_t> dead_matching(const job_filter& filter);

  /// The table's part of a page of the jobs view (shepherd_core_jobs.cpp).
  void list_table(const job_filter& filter, job_page& page);

  /// The dead set's part of a page: its matching jobs up to where the
  /// table's part ended, merged into `page` in id order.
  void list_dead(const job_filter& filter, job_page& page);

  // -- outcomes (shepherd_core_outcomes.cpp) ----------------------------------

  void return_unstarted(const std::vector<attempt_id>& held, size_t from);

  void fail_held(const std::vector<attempt_id>& held, caf::error reason);

  void outcome(const attempt_id& id, caf::message* result, caf::error* failure,
               caf::timespan processing);

  void attempt_failed(const attempt_id& id, caf::error reason);

  void complete(uint64_t id, caf::message result);

  void fail(uint64_t id, caf::error err);

  /// Delivers an outcome and forgets the operation; fans the end out.
  void settle(uint64_t id, caf::message&& outcome, bool done);

  /// Settles a result a worker prepared as its caller's reply: a plain
  /// request gets the reply as it is; any other caller a message.
  void settle(uint64_t id, prepared_reply&& reply);

  /// Tells whoever waits for an ended operation its outcome.
  void answer(operation_table::ended& ended, caf::message&& outcome,
              bool done);

  /// Forgets an operation without telling anyone (its caller was told).
  void forget(uint64_t id);

  /// Each unit cleans up after an operation that ended.
  void ended_hooks(const operation_table::ended& ended);

  void record(caf::message sent, bool outcome);

  void check_drained();

  void on_drain_deadline();

  // -- helpers ----------------------------------------------------------------

  time_point now() const {
    return fx_.now();
  }

  bool draining() const noexcept {
    return adm_.closed();
  }

  void note_available();

  void note_waiting();

  /// A submit or operation left (`idle_waits`): answers the waits it
  /// completes, and tells subscribers when the pool went idle.
  void left(uint64_t intake);

  /// Answers the waits that `idle_waits` completed.
  void answer_waits();

  pool_options opts_;
  bool durable_;
  /// Other shepherds share the store's queue (`work_store::shared`).
  bool shared_ = false;
  shepherd_effects& fx_;
  worker_roster roster_;
  operation_table table_;
  queue_link link_;
  admission adm_;
  supervision sup_;
  monitors mon_;
  flow_gate gate_;
  idle_waits waits_;
  dispatcher disp_;
  /// Operations that failed for good (empty and untouched when none did).
  dead_set dead_;
  /// Pending operations whose caller waits for a response.
  size_t promised_ = 0;
  std::vector<caf::response_promise> resize_promises_;
  std::vector<caf::response_promise> drain_promises_;
  /// Workers replaced after a timeout that have not terminated yet.
  std::unordered_map<const void*, caf::actor> abandoned_;
  /// Workers a shrink step stopped whose down message has not come yet:
  /// the next step waits for them (see resize_step).
  std::unordered_set<const void*> stopping_;
  caf::error quit_reason_;
  /// Parked submits are being admitted (no reentry).
  bool admitting_ = false;
  /// Callers are watched for orphans (`skip_orphaned`).
  bool watch_callers_ = false;
  /// `exp_total`: the operations the caller expects in all.
  uint64_t expected_total_ = 0;
};

} // namespace pool
