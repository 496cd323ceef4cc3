#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/timespan.hpp>

#include "pool/detail/ready_list.hpp"
#include "pool/dispatch_tuning.hpp"
#include "pool/flow_gate.hpp"
#include "pool/key_limits.hpp"
#include "pool/detail/monitors.hpp"
#include "pool/detail/operation_table.hpp"
#include "pool/detail/queue_link.hpp"
#include "pool/detail/shepherd_effects.hpp"
#include "pool/stats.hpp"
#include "pool/work_record.hpp"
#include "pool/detail/worker_roster.hpp"

namespace pool {

/// What the dispatcher asks of the shepherd.
class dispatch_host {
public:
  virtual ~dispatch_host();

  /// The operation's caller terminated (`skip_orphaned`): fail it as
  /// cancelled instead of starting it.
  virtual void orphaned(uint64_t id) = 0;

  /// Operations left the waiting state (a worker holds them now): parked
  /// submits may fit.
  virtual void room_changed() = 0;

  /// A joined worker was woken: it must ask for work in time.
  virtual void woke_joined(worker_ref worker) = 0;
};

/// How work reaches workers: the pattern's plain pull (wake a sleeper, it
/// asks, the queue answers, it gets `work_to_do`), and, for the pool's own
/// workers, the speed mechanisms of `dispatch_tuning` (asking the queue on
/// a sleeper's behalf, answering `go_sleep` without the queue, batches,
/// and one ahead mechanism: due entries taken out for busy workers' next
/// batches, sent ahead; docs/design.md). Every entry a worker gets came out
/// of the queue. Joined workers always get plain pull. Plain value over the
/// other units.
class dispatcher {
public:
  using time_point = caf::actor_clock::time_point;

  /// Most entries taken out ahead of time.
  static constexpr size_t max_ready = 64;

  dispatcher(dispatch_tuning tuning, std::optional<caf::timespan> timeout,
             bool durable, worker_roster& roster, operation_table& table,
             queue_link& link, monitors& mon, shepherd_effects& fx,
             dispatch_host& host, flow_gate& gate,
             key_flow_options keys = {});

  const dispatch_tuning& tuning() const noexcept {
    return tuning_;
  }

  // -- events -----------------------------------------------------------------

  /// The queue's counts arrived: wakes as many sleepers as there is due
  /// work nobody is about to take (most recently slept first), arms the due
  /// timer, takes entries out ahead.
  void on_counts(const queue_counts& counts);

  /// Another store of a shared queue added work: the most recently slept
  /// worker asks the queue (its counts are estimates); returns false if no
  /// worker sleeps.
  bool wake_one();

  /// An entry due now just went to the queue: if no worker waits for work
  /// and one of the pool's own sleeps, it asks the queue for its work right
  /// behind the add (the queue answers in order), without a wake-up round
  /// trip.
  void added_due_now();

  /// The worker asks for work (it is waiting now).
  void want_work(worker_ref worker);

  /// Entries the queue handed out for `ask`.
  void on_work(const exchange::get& ask, std::vector<work_record> records);

  /// The queue had nothing due for `ask`; the next is due in `wait`.
  void on_no_work(const exchange::get& ask, caf::timespan wait);

  /// The due timer fired.
  void on_due_timer();

  /// The pool was paused: no attempt starts until `resumed`; the entry
  /// handed ahead, unless taken, is withdrawn.
  void paused();

  /// The pool was resumed: sleepers wake for the due work (after a
  /// recount).
  void resumed();

  /// The worker reported its first held attempt: the next one of its batch
  /// starts now (its timer too).
  void next_in_batch(worker_ref worker, worker_slot& slot);

  /// The worker's batch ended (it reported, or it is gone): the tokens it
  /// held count as spent now.
  void batch_done(worker_slot& slot);

  /// Records the processing time of `jobs` jobs that took `elapsed`
  /// together (stats and batch sizing).
  void note_processing(caf::timespan elapsed, size_t jobs);

  // -- lookahead --------------------------------------------------------------

  /// The worker's current batch ended and it holds a batch sent ahead: that
  /// one runs now (its first attempt is timed from now), and the next is
  /// sent ahead. Returns false if it holds none.
  bool start_ahead(worker_ref worker, worker_slot& slot);

  /// Everything the worker holds goes back to the caller (it stopped,
  /// timed out or broke the protocol), its batch sent ahead withdrawn, so
  /// that the worker never runs it; `slot.held` is left empty.
  std::vector<attempt_id> release_held(worker_slot& slot);

  /// `release_held` of a worker that reported every attempt it held (none
  /// sent ahead): nothing goes back, and the slot keeps its buffer.
  void clear_held(worker_slot& slot) {
    slot.held.clear();
    forget_ahead(slot);
  }

  // -- lifecycle hooks --------------------------------------------------------

  /// The operation ended: it leaves the buffer; if it was sent ahead, the
  /// rest of its batch is taken back.
  void operation_ended(uint64_t id, const operation& op);

  /// The worker stops: it leaves the askers and lookahead lists; its batch
  /// sent ahead is withdrawn (it goes back with the rest it held).
  void worker_gone(worker_ref worker);

  /// The queue was respawned: entries it was asked for are gone with it.
  void queue_restarted();

  // -- figures ----------------------------------------------------------------

  /// Due entries no worker started, as the shepherd knows them: those the
  /// queue reported available minus those it handed out since, plus those
  /// taken out ahead, plus those sent ahead to busy workers (another worker
  /// may take them).
  uint64_t available() const noexcept {
    return queue_available_ + ready_.size() + table_.sent_ahead();
  }

  /// Puts `id` back into the queue, due at `due` (unstarted, or a retry).
  void requeue(const attempt_id& id, time_point due);

  /// How long an attempt of operation `id` (`op`) may run
  /// (`work_record::budget`): its own attempt timeout, else the pool's; 0
  /// for no limit.
  caf::timespan budget(uint64_t id, const operation& op) const {
    auto own = table_.policy(id, op).attempt_timeout;
    return own != caf::timespan::zero() ? own
                                        : timeout_.value_or(caf::timespan{0});
  }

private:
  using record_batch = std::vector<work_record>;

  /// A wait without end (`no_work` and `queue_counts` use it for "nothing
  /// delayed").
  static constexpr caf::timespan no_deadline = caf::timespan::max();

  /// Wakes the most recently slept worker to look for work: one of the
  /// pool's own looks for it at once (the queue is asked on its behalf),
  /// a joined one is sent `wake_up`.
  void wake_sleeper();

  /// Wakes as many sleepers as there is due work nobody is about to take
  /// and the gate lets start.
  void wake_for_available();

  /// Parked entries whose key may start now, up to `n`, one per key in
  /// turn.
  record_batch take_parked(size_t n);

  /// Whether `record`'s concurrency key lets it start at `now` (then it
  /// counts as started, or, going out in the batch of `batch`, holds a
  /// token of its key's rate until the batch reports); if not, parks it.
  bool key_admits(work_record& record, time_point now,
                  worker_slot* batch = nullptr);

  /// Keys with parked entries that may start now.
  size_t startable_keys();

  /// Whether the gate lets `worker` start an attempt now; if not, puts it
  /// to sleep until it may (the due timer wakes it).
  bool gate_open(worker_ref worker);

  bool own(const worker_slot& slot) const noexcept {
    return !slot.joined;
  }

  /// Whether the queue is known to hold nothing due.
  bool nothing_due() const;

  size_t batch_size(bool joined) const;

  void find_work(worker_ref worker);

  void request_work(worker_ref worker, size_t n);

  void dispatch(worker_ref worker, record_batch batch);

  void put_to_sleep(worker_ref worker, caf::timespan wait);

  void arm_due(caf::timespan wait);

  record_batch take_ready(size_t n);

  void serve_askers();

  void prefetch();

  /// Sends the busy worker its next batch from the entries taken out
  /// ahead, if it has none yet (else it waits for the next prefetch).
  void send_ahead(worker_ref worker);

  /// Sends batches ahead to the workers waiting for one while entries are
  /// ready.
  void serve_lookahead();

  /// Withdraws the worker's batch sent ahead (its attempts stay in
  /// `held`).
  void forget_ahead(worker_slot& slot);

  /// Puts `back`, taken back from a worker, first in line again.
  void put_first(record_batch back);

  /// Takes back the batch sent ahead to the worker, unless it started it:
  /// its entries wait again (the returned records; those of operations
  /// that ended are left out).
  record_batch take_back(worker_slot& slot);

  /// Takes back the oldest batch sent ahead that has not started into the
  /// entries taken out ahead (for a worker that asks while none is).
  void take_back_oldest();

  /// Takes back every batch sent ahead that has not started: they wait
  /// first in line (a pause).
  void take_back_all();

  /// An operation sent ahead to `holder` ended: the rest of that batch is
  /// taken back, unless it started.
  void ended_ahead(worker_ref holder);

  /// The operation of `record` if it still waits to start (it did not end,
  /// move on to a later attempt or go to a worker meanwhile); else null.
  operation* startable(const work_record& record) const;

  /// `worker` holds `record`, of `op`, from `now` on (`ahead`: in the
  /// batch sent ahead to it); sets its time budget. Returns whether the
  /// attempt is timed.
  bool hold(worker_ref worker, work_record& record, operation& op,
            time_point now, bool ahead = false);

  void start_timer(const attempt_id& id, worker_ref worker);

  dispatch_tuning tuning_;
  std::optional<caf::timespan> timeout_;
  bool durable_;
  worker_roster& roster_;
  operation_table& table_;
  queue_link& link_;
  monitors& mon_;
  shepherd_effects& fx_;
  dispatch_host& host_;
  flow_gate& gate_;
  /// Per-key limits: entries whose key may not start yet wait here.
  key_gate keys_;
  /// Due entries in the queue, as of its last counts, minus those it handed
  /// out since.
  uint64_t queue_available_ = 0;
  /// Due entries taken out ahead, oldest first.
  ready_list ready_;
  /// Entries asked for by pending prefetches.
  size_t prefetching_ = 0;
  /// Waiting workers served by the next prefetches, in order.
  std::deque<worker_ref> askers_;
  /// Busy workers that wait for a batch to be sent ahead, in order.
  std::deque<worker_ref> lookahead_wanted_;
  /// Workers a batch was sent ahead to, oldest first (some may have started
  /// it or left since).
  std::deque<worker_ref> ahead_holders_;
  /// Average processing time per job in ns (moving average); negative
  /// until the first report.
  double job_ns_ = -1;
  timer_slot due_timer_;
};

} // namespace pool
