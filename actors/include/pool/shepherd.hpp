#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/behavior.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "pool/backoff.hpp"
#include "pool/events.hpp"
#include "pool/histogram.hpp"
#include "pool/log.hpp"
#include "pool/options.hpp"
#include "pool/protocol.hpp"
#include "pool/work_store.hpp"

namespace pool {

/// What the typed façade hands to the type-erased shepherd.
struct shepherd_config {
  pool_options options;
  /// The queue's storage; outlives the queue actor.
  std::shared_ptr<work_store> store;
  /// Spawns one local worker. Called from inside the shepherd.
  std::function<caf::actor(caf::actor_system&)> spawn_worker;
  /// Whether a submitted payload is the pool's input.
  std::function<bool(const caf::message&)> accepts;
  /// The elements after the first `skip` of a submit's content, moved into
  /// a compact message of the pool's input, or none if they are not the
  /// input (or not serializable: the submit is then kept as it came).
  std::function<std::optional<caf::message>(caf::type_erased_tuple&, size_t)>
    repack;
  /// The input type(s) as text, for error messages.
  std::string input_type;
};

/// The shepherd's view of one worker.
struct worker_slot {
  caf::actor handle;
  worker_phase phase = worker_phase::sleeping;
  /// The attempts this worker holds while `working`: one, or a batch in
  /// the order the worker runs them.
  std::vector<attempt_id> held;
  /// A `get_work` for this worker is on its way to or from the queue.
  bool asking = false;
  /// Work is being sought for this worker while it sleeps and knows
  /// nothing of it: it gets `work_to_do`, or no message at all.
  bool unaware = false;
  /// Joined through `(join_pool, actor)` rather than spawned by the pool.
  bool joined = false;
  /// Surplus after a shrink: stops once its current attempt is reported.
  bool retiring = false;
  /// When the worker last went to sleep (for autoscaling).
  caf::actor_clock::time_point slept_at;
  /// When the first attempt held started (dispatch, or the report of the
  /// attempt before it in a batch reported attempt by attempt).
  caf::actor_clock::time_point started;
};

/// One accepted operation, from submit until its caller got an outcome.
/// Kept small (one per queued entry): what only some operations need lives
/// in `operation_extras`.
struct operation {
  /// Who gets the outcome: the caller of `submit`, answered as the response
  /// to its request `reply_id`, or (`tracked`) the caller of `enqueue`,
  /// sent `op_done` / `op_failed`. Null for an operation adopted from a
  /// store, and for a request that came through forwarding stages (its
  /// promise is kept in the extras).
  caf::strong_actor_ptr caller;
  caf::message_id reply_id;
  /// The input, kept for retries.
  caf::message payload;
  /// The worker holding the current attempt, if dispatched.
  caf::actor holder;
  caf::actor_clock::time_point submitted_at;
  /// While queued, when the current attempt is due; while dispatched, when
  /// it was dispatched.
  caf::actor_clock::time_point stamp;
  /// The attempt the shepherd currently waits for; replies for any other
  /// attempt are stale.
  uint32_t attempt = 1;
  /// `enqueue`: the outcome goes to `caller` as a message.
  bool tracked = false;
  /// Counted in `shepherd_state::promised_`.
  bool promised = false;
};

/// What only some operations carry: failed attempts, a unique key, a
/// watched caller.
struct operation_extras {
  std::vector<attempt_failure> history;
  /// Unique key (`enq_unique`); empty for none.
  std::string key;
  /// The calling actor, watched only with `skip_orphaned`.
  caf::actor_addr caller;
  /// The promise of a request that came through forwarding stages.
  caf::response_promise promise;
};

/// One submit on its way into the pool: waiting for room in a full queue,
/// for the lookup of its unique key, or being accepted.
struct submission {
  caf::message payload;
  caf::timespan delay{0};
  /// `enqueue`: `promise` gets the operation id (for a durable store once
  /// the operation is on disk), the outcome goes to `sender` as a message.
  /// `submit`: `promise` gets the outcome.
  bool tracked = false;
  caf::strong_actor_ptr sender;
  caf::response_promise promise;
  /// Unique key; empty for none.
  std::string key;
};

/// One message to the queue that still awaits its answer. The queue is a
/// single actor answering each kind of answer in order, so answers are
/// matched first-in, first-out per kind (a durable queue holds some answers
/// back until its commit, so kinds may interleave differently); this avoids
/// CAF 0.17's per-request bookkeeping, whose cost grows with the number of
/// outstanding requests. When the queue is respawned, the exchanges still
/// pending are sent again, in their original order.
struct queue_exchange {
  enum kind_type : uint8_t {
    add,
    /// Several entries due now, in one message (`ids`).
    add_many,
    get,
    count,
    stats,
    remove,
    /// Durable stores: record an outcome, a failed attempt.
    finish,
    note,
    /// Look up a unique key; an operation's record.
    find_key,
    lookup,
  };

  queue_exchange(kind_type k, attempt_id i = {},
                 caf::actor_clock::time_point d = {}, caf::actor w = {},
                 caf::response_promise p = {})
      : kind(k), id(i), due(d), worker(std::move(w)), promise(std::move(p)) {
    // nop
  }

  kind_type kind;
  /// Order in which the exchange was first sent.
  uint64_t seq = 0;
  /// `add`: the attempt whose entry is being added; `remove`: the
  /// operation whose entries are dropped.
  attempt_id id;
  /// `add`: not handed out before `due`.
  caf::actor_clock::time_point due;
  /// `get`: the worker the answer is for.
  caf::actor worker;
  /// `stats`, `lookup`: the caller waiting for the answer; `add` of a
  /// tracked submit to a durable store: the caller waiting for the id.
  caf::response_promise promise;
  /// `finish`, `note`, `find_key`, `lookup`: the message sent to the queue
  /// (sent again to a respawned queue).
  caf::message sent;
  /// `add`, `find_key`: the unique key.
  std::string key;
  /// `get`: how many entries were asked for.
  uint32_t wanted = 1;
  /// `add_many`: the attempts whose entries are being added, in order.
  std::vector<attempt_id> ids;
  /// `add`, `add_many`: sent due now; counted in `adds_pending_`.
  bool due_now = false;
};

class shepherd_state;

using shepherd_actor = caf::stateful_actor<shepherd_state>;

/// State of the shepherd. Its member functions are called only from the
/// shepherd's own message handlers.
class shepherd_state {
public:
  static inline const char* name = "pool.shepherd";

  ~shepherd_state();

  /// Spawns the queue and the workers; returns the shepherd's behavior.
  caf::behavior init(shepherd_actor* self, shepherd_config cfg);

  /// Accepts one operation: enqueues it and keeps the caller's promise.
  /// With `tracked`, replies the operation id at once and sends the
  /// outcome to the caller later as `op_done` / `op_failed`.
  caf::result<caf::message> submit(caf::message payload, caf::timespan delay,
                                   bool tracked, std::string key = {});

  /// The pool's figures; queue figures are filled in by the caller.
  pool_stats worker_stats() const;

private:
  /// The kinds of answer the queue gives.
  enum class answer_kind { counts, work, key, record };

  using key_type = caf::actor_control_block*;
  using time_point = caf::actor_clock::time_point;

  static key_type key_of(const caf::actor& x) {
    return caf::actor_cast<key_type>(x);
  }

  time_point now() const;

  // -- workers ----------------------------------------------------------------

  worker_slot* find_worker(const caf::actor& handle);

  void add_worker(caf::actor handle, bool joined);

  void remove_worker(key_type key);

  void set_phase(key_type key, worker_slot& slot, worker_phase phase);

  /// Spawns a replacement for a local worker, unless the pool is already at
  /// its configured size or restarts exceed the configured intensity (then
  /// the shepherd quits and this returns false).
  bool replace_worker();

  /// Starts or stops local workers until `n` remain (busy surplus workers
  /// stop after their current attempt); returns an error for n == 0.
  caf::error resize(size_t n);

  /// Stops a local worker for good (not a failure, no replacement).
  void retire(key_type key);

  /// Replies to resize requests once no worker is retiring.
  void check_resized();

  /// Records a restart; quits with `restart_intensity` when there were more
  /// than allowed within the window. Returns false after quitting.
  bool note_restart();

  /// Wakes as many sleeping workers as there is due work nobody is about
  /// to take, most recently slept first; arms the due timer.
  void on_counts(const queue_counts& counts);

  /// Hands `batch` (one or more entries, in order) to a waiting worker,
  /// minus the entries that became obsolete meanwhile.
  void dispatch(const caf::actor& worker, std::vector<work_record> batch);

  /// How many jobs the next `work_to_do` to a worker should carry: one,
  /// unless more is due than there are workers and the jobs observed so far
  /// are short (see `pool_options::max_batch`). Joined workers get one.
  size_t batch_size(bool joined) const;

  void put_to_sleep(const caf::actor& worker, caf::timespan wait);

  void arm_timer(caf::timespan wait);

  /// Arms the timer whose armed deadline is kept in `at` to send `tag` at
  /// `deadline`, unless it is already armed to fire no later.
  template <class Atom>
  void arm(std::optional<time_point>& at, time_point deadline, Atom tag);

  /// Clears a timer's armed deadline once it has passed.
  void fired(std::optional<time_point>& at);

  /// Grows or shrinks to `n` local workers on request; refuses sizes
  /// outside the autoscale limits.
  caf::error resize_request(size_t n);

  // -- monitoring -------------------------------------------------------------

  void log(log_level level, const std::string& text);

  /// Whether any subscriber wants events of `kind`.
  bool wants(event_kind kind) const noexcept {
    return (subscribed_kinds_ & event_bit(kind)) != 0;
  }

  /// Sends `ev` to every subscriber that wants its kind.
  void publish(pool_event ev);

  caf::error subscribe(caf::actor who, uint32_t mask);

  void unsubscribe(const caf::actor_addr& who);

  /// Records the queue's count of available entries and checks the backlog
  /// condition (available > workers) for the alarm and for autoscaling.
  void set_available(uint64_t n);

  /// One available entry went to a worker (or was dropped).
  void take_available() {
    set_available(available_ > 0 ? available_ - 1 : 0);
  }

  void check_backlog();

  /// Logs the overload warning (and sends its event) when more operations
  /// wait than the threshold, at most once per interval.
  void check_overload();

  /// Notes that a worker fell asleep; arms the autoscale idle timer.
  void note_sleeping(worker_slot& slot);

  /// Stops local workers that slept for `shrink_after`, down to the
  /// autoscale minimum.
  void shrink_idle();

  /// Marks an operation as no longer held by a worker.
  void release_holder(operation& op);

  // -- queue exchanges --------------------------------------------------------

  /// Asks the queue for up to `n` entries on behalf of a waiting worker.
  void request_work(const caf::actor& worker, size_t n);

  /// Takes up to `n` entries from the front of `ready_`.
  std::vector<work_record> take_ready(size_t n);

  /// Serves waiting askers from `ready_`; those no pending prefetch can
  /// serve ask the queue themselves.
  void serve_askers();

  /// Hands the first attempt of a just accepted operation straight to a
  /// sleeping local worker, without the queue, when the queue holds nothing
  /// due (`nothing_due`). Returns false (and does nothing) otherwise.
  bool hand_out_directly(uint64_t id, operation& op, time_point t);

  /// Whether the queue is known to hold nothing due: no entry counted
  /// available, none kept for a grouped add, and no add or count on its
  /// way. Always false without the short cuts and for a durable store.
  bool nothing_due() const;

  /// Gives a waiting worker the oldest entry of `ready_`, or waits for a
  /// prefetch on its way, or asks the queue.
  void find_work(const caf::actor& worker);

  /// While every worker is busy and the queue holds due entries nobody has
  /// asked for, takes up to `max_ready` of them out ahead of time, so that a
  /// worker finishing its job gets the next one without a round trip to
  /// the queue.
  void prefetch();

  /// The queue's answer to a prefetch of `asked` entries.
  void on_prefetched(std::vector<work_record> records, uint32_t asked);

  // -- hand-ahead (docs/protocol.md "Hand-ahead") -----------------------------

  /// Most busy workers one entry is handed ahead to.
  static constexpr size_t max_ahead_takers = 4;

  /// Hands the oldest entry of `ready_` ahead to up to `max_ahead_takers`
  /// busy local workers under one ticket: the first of them whose job ends
  /// takes it from its mailbox, without waiting for the shepherd's answer to
  /// its report. One entry at a time, so the oldest waiting entry is always
  /// the next to start. Only while nobody waits for work and jobs go one at
  /// a time (with batches there is no hand-off to save).
  void hand_ahead();

  /// Whether the worker `key` was handed the entry now ahead and may take
  /// it or took it.
  bool may_take_ahead(key_type key) const;

  /// A worker asks for work: if it took the entry handed ahead, it holds it
  /// from now on and this returns true.
  bool took_ahead(key_type key, worker_slot& slot);

  /// Withdraws the entry handed ahead if no worker has taken it: its
  /// record, for a worker that asks, if still current.
  std::optional<work_record> withdraw_ahead();

  /// The operation `id` ends: withdraws it if it is the entry handed ahead.
  void withdraw_ended(uint64_t id);

  /// The worker `key` stops (lost or retired): if it took the entry handed
  /// ahead, returns its attempt (it was running it); an offer still open
  /// goes back to the queue, so that it cannot take it any more.
  std::optional<attempt_id> drop_ahead_taker(key_type key);

  /// The operation of an entry about to start, if its watched caller
  /// terminated, fails as cancelled here: returns whether it did.
  bool orphaned(uint64_t id);

  /// Entries taken out ahead of time, at most this many.
  static constexpr size_t max_ready = 64;

  /// Adds the current attempt of an operation to the queue, due at `due`.
  void add_work(attempt_id id, time_point due);

  /// Sends an `add` exchange to the queue, or, while another add is on its
  /// way and this entry is due now without a key or a waiting caller,
  /// keeps it for the next `add_many` (sent when the queue answers).
  void put_entry(queue_exchange ex);

  /// Sends the entries kept by `put_entry` in one message.
  void flush_entries();

  /// An `add` or `add_many` exchange was answered.
  void added();

  void refresh_counts();

  /// Sends `ex` to the queue and records it as pending.
  void send_exchange(queue_exchange ex);

  static answer_kind answer_of(queue_exchange::kind_type kind);

  /// Takes the oldest pending exchange if the queue sent the current
  /// message and that exchange expects an answer of kind `expected`.
  std::optional<queue_exchange> take_exchange(answer_kind expected);

  /// Handles an error from the queue for its oldest pending exchange.
  void on_queue_error(caf::error& err);

  /// Spawns the queue actor over the store and monitors it.
  void spawn_queue();

  /// Respawns the queue over the same store and re-sends what was pending.
  void restart_queue();

  // -- outcomes ---------------------------------------------------------------

  void on_status(const attempt_id& id, caf::message* result,
                 caf::error* failure);

  /// A batch's status reply: the outcomes of the first attempts the worker
  /// holds, in order; those it holds beyond them were not started and go
  /// back to the queue.
  void on_status(std::vector<attempt_outcome>& outcomes);

  /// The attempts a worker held when it was lost: the first fails with
  /// `reason`, the others go back unstarted.
  void fail_held(const std::vector<attempt_id>& held, caf::error reason);

  /// A worker reported the last attempt it held: it retires if it is
  /// surplus, else it waits for work.
  void done_holding(key_type key, worker_slot& slot);

  /// Puts the attempts `held[from...]` of a batch, which were not started,
  /// back into the queue, due now, as the same attempts.
  void return_unstarted(const std::vector<attempt_id>& held, size_t from);

  /// Records the processing time of `jobs` jobs that took `elapsed`
  /// together (stats and the batch sizing).
  void note_processing(caf::timespan elapsed, size_t jobs);

  /// The timer of the attempt `id` held by the worker `addr` fired.
  void on_attempt_timeout(const attempt_id& id, const caf::actor_addr& addr);

  void on_down(caf::down_msg& msg);

  /// A worker left the pool (died or timed out): the attempt it held
  /// fails, a local worker is replaced, its work finds another taker.
  void worker_lost(key_type key, caf::error reason);

  /// Records a failed attempt; retries it after the backoff delay or fails
  /// the operation for good with its history.
  void attempt_failed(const attempt_id& id, caf::error reason);

  /// Creates the operation and enqueues its first attempt; the outcome goes
  /// to `listener` if set, else to `promise`. Returns its id.
  uint64_t accept(submission sub);

  /// A unique submit whose key is not pending here: asks a durable store
  /// whether it knows the key, else accepts it.
  void submit_unique(submission sub);

  /// The queue's answer to `find_key`: replies the known id to every submit
  /// waiting for `key`, or accepts the first and replies its id to all.
  void on_key_found(const std::string& key, uint64_t found);

  /// `(op_status, id)`: the operation's record, from memory while it is
  /// pending, else from a durable store.
  caf::result<caf::message> status_of(uint64_t operation_id);

  /// Records an outcome or a failed attempt in a durable store.
  void record(queue_exchange::kind_type kind, caf::message sent);

  /// Adopts the operations a durable store holds from an earlier run.
  void adopt_unfinished();

  /// Whether a bounded queue has no room for another operation.
  bool full() const;

  /// Accepts parked submits while there is room.
  void admit_parked();

  using operation_map = std::unordered_map<uint64_t, operation>;

  /// The extras of an operation, made on first use.
  operation_extras& extras_of(uint64_t operation_id) {
    return extras_[operation_id];
  }

  /// The extras of an operation, if it has any.
  operation_extras* find_extras(uint64_t operation_id) {
    if (extras_.empty()) // the usual case: no hashing on the hot path
      return nullptr;
    auto i = extras_.find(operation_id);
    return i != extras_.end() ? &i->second : nullptr;
  }

  /// Delivers the outcome of the pending operation `op` (to its promise, or
  /// as `tag` to its listener) and forgets it.
  template <class Atom, class Outcome>
  void settle(operation_map::iterator op, Atom tag, Outcome outcome);

  /// Forgets an operation without telling anyone (its caller was told).
  void forget(uint64_t operation_id);

  void forget(operation_map::iterator op);

  /// Recomputes `subscribed_kinds_` after the subscribers changed.
  void update_subscribed_kinds();

  /// The outcome of the reported attempt `id` of the operation `op`.
  void on_outcome(operation_map::iterator op, const attempt_id& id,
                  caf::message* result, caf::error* failure,
                  caf::timespan processing);

  /// Completes an operation with its result and forgets it.
  void complete(operation_map::iterator op, caf::message result);

  /// Completes an operation with an error and forgets it.
  void fail(uint64_t operation_id, caf::error err);

  /// Stops accepting; replies (and stops) once nothing is pending; with a
  /// deadline, fails what is left when it passes.
  caf::result<void> drain(std::optional<caf::timespan> deadline);

  /// Replies to drain requests and stops once nothing is pending.
  void check_drained();

  /// Cancels a pending operation: its caller gets `cancelled` once.
  caf::error cancel(uint64_t operation_id);

  shepherd_actor* self_ = nullptr;
  shepherd_config cfg_;
  std::optional<backoff> backoff_;
  caf::actor queue_;
  /// Pending exchanges, one FIFO per kind of answer.
  std::array<std::deque<queue_exchange>, 4> exchanges_;
  uint64_t next_exchange_ = 1;

  std::deque<queue_exchange>& exchanges_of(answer_kind kind) {
    return exchanges_[static_cast<size_t>(kind)];
  }

  /// Whether any pending exchange satisfies `pred`.
  template <class Predicate>
  bool any_exchange(Predicate pred) const {
    for (auto& fifo : exchanges_)
      if (std::any_of(fifo.begin(), fifo.end(), pred))
        return true;
    return false;
  }
  std::unordered_map<key_type, worker_slot> workers_;
  /// Sleeping workers, most recently slept last.
  std::vector<key_type> sleeping_;
  size_t waiting_ = 0;
  size_t busy_ = 0;
  size_t joined_ = 0;
  /// Local workers the pool should have (starts at `options.workers()`).
  size_t configured_ = 0;
  /// Busy surplus workers that stop after their current attempt.
  size_t retiring_ = 0;
  std::vector<caf::response_promise> resize_promises_;
  /// Workers replaced after a timeout that have not terminated yet.
  std::unordered_map<key_type, caf::actor> abandoned_;
  operation_map operations_;
  /// Extras of pending operations that have any.
  std::unordered_map<uint64_t, operation_extras> extras_;
  /// Pending operations whose caller waits for a response (a response
  /// promise); while there are any, `keep_alive_` holds a reference to the
  /// shepherd, as the promises it replaces did: a pool with requests to
  /// answer stays alive, whoever else still holds its handle.
  size_t promised_ = 0;
  caf::strong_actor_ptr keep_alive_;

  /// Delivers `outcome` as the response to the request of `op`.
  template <class Outcome>
  void respond(uint64_t operation_id, operation& op, Outcome outcome) {
    if (op.caller) {
      caf::response_promise{keep_alive_, op.caller, {}, op.reply_id}.deliver(
          std::move(outcome));
    } else if (auto extras = find_extras(operation_id)) {
      if (extras->promise.pending())
        extras->promise.deliver(std::move(outcome));
    }
  }
  uint64_t next_operation_ = 1;
  /// When the armed due timer fires, if one is armed.
  std::optional<time_point> timer_at_;
  /// Times of recent restarts, oldest first, for the restart intensity.
  std::deque<time_point> restarts_;
  pool_stats totals_;
  log_histogram queue_wait_;
  log_histogram processing_;
  /// With `skip_orphaned`: callers with pending operations, and whether
  /// they have terminated.
  struct caller_watch {
    size_t pending = 0;
    bool down = false;
  };
  std::unordered_map<caf::actor_addr, caller_watch> callers_;

  /// Stops watching a caller once it has nothing pending.
  void release_caller(const caf::actor_addr& caller);

  /// Submits waiting for room in a full queue, oldest first.
  std::deque<submission> parked_;
  /// Whether the store is durable (outcomes and failures are recorded).
  bool durable_ = false;
  /// Unique keys of pending operations.
  std::unordered_map<std::string, uint64_t> unique_keys_;
  /// Unique submits waiting for the store's answer about their key.
  std::unordered_map<std::string, std::vector<submission>> key_lookups_;
  /// Submits waiting in `key_lookups_` (they count against the capacity).
  size_t lookups_pending_ = 0;

  log_hook log_;
  struct subscriber {
    caf::actor handle;
    uint32_t mask;
  };
  std::vector<subscriber> subscribers_;
  /// Union of the subscribers' masks.
  uint32_t subscribed_kinds_ = 0;
  /// Due entries no worker holds: those available in the queue, as of the
  /// queue's last answer, plus those in `ready_`.
  uint64_t available_ = 0;
  /// Due entries taken from the queue by `prefetch`, oldest first; handed
  /// to the next worker that asks. An entry whose operation ended or moved
  /// on meanwhile is dropped when its turn comes.
  std::deque<work_record> ready_;
  /// Entries asked for by prefetches (`get` exchanges on behalf of no
  /// worker) still pending.
  size_t prefetching_ = 0;
  /// Entries asked for by all pending `get` exchanges.
  size_t getting_ = 0;
  /// Adds of entries due now (`add`, `add_many`) still pending; entries
  /// kept by `put_entry` wait for their answers. (Delayed adds do not hold
  /// them back.)
  size_t adds_pending_ = 0;
  /// Entries due now kept for the next `add_many`, in order.
  std::vector<attempt_id> entries_;
  /// Average processing time per job, in ns (moving average); negative
  /// until the first status reply.
  double job_ns_ = -1;
  /// Waiting workers that asked when `ready_` was empty but a prefetch was
  /// on its way; served by prefetches in order.
  std::deque<caf::actor> askers_;
  /// The entry handed ahead, until a worker took it and asked again or the
  /// shepherd withdrew it; `to` are the workers it was sent to.
  struct ahead_offer {
    attempt_id id;
    claim_ticket ticket;
    std::vector<key_type> to;
  };
  std::optional<ahead_offer> ahead_;
  /// Operations held by a worker (dispatched, not yet reported).
  size_t in_flight_ = 0;
  /// Since when available > workers; restarted by each autoscale growth.
  std::optional<time_point> backlog_since_;
  std::optional<time_point> grow_since_;
  bool alarm_ = false;
  std::optional<time_point> backlog_timer_at_;
  std::optional<time_point> idle_timer_at_;
  std::optional<time_point> last_overload_;

  /// Set by `drain`: new submits are refused with `closed`.
  bool draining_ = false;
  std::vector<caf::response_promise> drain_promises_;
};

/// The shepherd actor. Spawned by `spawn_pool`; see docs/protocol.md.
caf::behavior shepherd(shepherd_actor* self, shepherd_config cfg);

} // namespace pool
