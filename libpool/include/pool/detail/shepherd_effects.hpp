#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/actor_clock.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>
#include <caf/response_promise.hpp>
#include <caf/timespan.hpp>

#include "pool/events.hpp"
#include "pool/log.hpp"
#include "pool/detail/operation_table.hpp"
#include "pool/work_record.hpp"
#include "pool/detail/worker_roster.hpp"

namespace pool {

/// The shepherd's timers (and its note-to-self to continue a long resize).
enum class timer_kind : uint8_t {
  /// The earliest delayed entry may be due.
  due,
  /// The processing time of `attempt`, held by `worker`, is up.
  attempt,
  /// A drain's deadline passed.
  drain,
  /// The backlog condition may have persisted long enough.
  backlog,
  /// A sleeping worker may have been idle long enough to stop.
  idle,
  /// The overload condition may have persisted long enough to warn.
  overload,
  /// A resize has more workers to spawn or stop.
  resize_step,
  /// A joined worker may have stayed silent too long after joining.
  probe,
};

/// Names the timer as traces show it, e.g. `"due_timer"`.
std::string to_string(timer_kind x);

/// A timer's message, sent by the shepherd to itself. Never crosses the
/// network; the shepherd accepts it only from itself.
struct timer_event {
  timer_kind kind = timer_kind::due;
  attempt_id attempt;
  worker_ref worker;
};

/// How the shepherd's decisions reach the world: every send, spawn,
/// monitor, timer, event and log line. Implemented by the shepherd actor;
/// tests implement it with a recorder. Called only from the shepherd's own
/// message handlers.
class shepherd_effects {
public:
  using time_point = caf::actor_clock::time_point;

  virtual ~shepherd_effects();

  virtual time_point now() const = 0;

  // -- the queue --------------------------------------------------------------

  virtual void to_queue(caf::message msg) = 0;

  // -- workers ----------------------------------------------------------------

  virtual void to_worker(const worker_slot& worker, caf::message msg) = 0;

  /// Sends `(work_to_do, record)`: the message an idle pool sends per job.
  /// By default a `to_worker`; the actor sends the values as they are,
  /// without building a `caf::message` first (one allocation less).
  virtual void work_to_do(const worker_slot& worker, work_record record);

  /// Sends `(work_to_do, batch, each)` (see `work_to_do`).
  virtual void work_batch(const worker_slot& worker,
                          std::vector<work_record> batch, bool each);

  /// Sends `(go_to_sleep)` (see `work_to_do`).
  virtual void go_to_sleep(const worker_slot& worker);

  /// Spawns and monitors a local worker.
  virtual worker_handle spawn_worker() = 0;

  /// Monitors a joined worker.
  virtual void watch_worker(const caf::actor& worker) = 0;

  /// Stops a local worker: `kill` (urgent, for one stuck past its timeout)
  /// or an orderly `user_shutdown`.
  virtual void stop_worker(const worker_handle& worker, bool kill) = 0;

  // -- callers ----------------------------------------------------------------

  /// Answers the request `to` with `msg`.
  virtual void respond(const reply_to& to, caf::message&& msg) = 0;

  /// Answers the request `to` with a reply a worker prepared (the shepherd
  /// actor sends the element on as it is; by default, as a message).
  virtual void respond(const reply_to& to, prepared_reply&& reply);

  /// Answers through a promise.
  virtual void deliver(caf::response_promise& promise, caf::message msg) = 0;

  /// Sends an outcome (`op_done` / `op_failed`) to the caller of `enqueue`.
  virtual void tell(const caf::strong_actor_ptr& to, caf::message msg) = 0;

  /// Starts or stops monitoring a caller (`skip_orphaned`).
  virtual void watch_caller(const caf::actor_addr& caller, bool on) = 0;

  /// Whether a pending request keeps the shepherd alive (see
  /// `shepherd_core::promised`).
  virtual void keep_alive(bool on) = 0;

  // -- time -------------------------------------------------------------------

  /// Sends `ev` to the shepherd itself after `delay` (zero: at once).
  virtual void schedule(caf::timespan delay, timer_event ev) = 0;

  // -- monitoring -------------------------------------------------------------

  /// Whether any subscriber wants events of `kind` (so that events nobody
  /// reads are never built).
  virtual bool wants(event_kind kind) const = 0;

  virtual void publish(pool_event ev) = 0;

  virtual void log(log_level level, const std::string& text) = 0;

  // -- lifetime ---------------------------------------------------------------

  /// The shepherd stops with `reason` (none: normally).
  virtual void quit(caf::error reason) = 0;
};

/// One of the shepherd's timers: armed for the earliest deadline asked for,
/// so that arming it again for a later one sends nothing.
class timer_slot {
public:
  using time_point = caf::actor_clock::time_point;

  /// Arms the timer to send `ev` at `deadline`, unless it fires no later.
  void arm(shepherd_effects& fx, time_point deadline, timer_event ev);

  /// The timer's message arrived: it is no longer armed if its deadline
  /// has passed.
  void fired(time_point now);

  bool armed() const noexcept {
    return at_.has_value();
  }

private:
  std::optional<time_point> at_;
};

} // namespace pool

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(pool::timer_event)
