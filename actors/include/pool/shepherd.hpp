#pragma once

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
  /// The input type(s) as text, for error messages.
  std::string input_type;
};

/// The shepherd's view of one worker.
struct worker_slot {
  caf::actor handle;
  worker_phase phase = worker_phase::sleeping;
  /// The attempt this worker holds while `working`.
  std::optional<work_record> current;
  /// A `get_work` for this worker is on its way to or from the queue.
  bool asking = false;
  /// Joined through `(join_pool, actor)` rather than spawned by the pool.
  bool joined = false;
};

/// One accepted operation, from submit until its caller got an outcome.
struct operation {
  caf::response_promise promise;
  /// The attempt the shepherd currently waits for (0 before dispatch).
  uint32_t attempt = 1;
};

/// One message to the queue that still awaits its answer. The queue is a
/// single actor answering in order, so answers are matched first-in,
/// first-out; this avoids CAF 0.17's per-request bookkeeping, whose cost
/// grows with the number of outstanding requests.
struct queue_exchange {
  enum kind_type : uint8_t { add, get, count, stats } kind;
  /// `add`: the operation whose entry is being added.
  uint64_t operation = 0;
  /// `get`: the worker the answer is for.
  caf::actor worker;
  /// `stats`: the caller waiting for a snapshot.
  caf::response_promise promise;
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
  caf::result<caf::message> submit(caf::message payload, caf::timespan delay);

  /// The pool's figures; queue figures are filled in by the caller.
  pool_stats worker_stats() const;

private:
  using key_type = caf::actor_control_block*;
  using time_point = caf::actor_clock::time_point;

  static key_type key_of(const caf::actor& x) {
    return caf::actor_cast<key_type>(x);
  }

  worker_slot* find_worker(const caf::actor& handle);

  void add_worker(caf::actor handle, bool joined);

  void remove_worker(key_type key);

  void set_phase(key_type key, worker_slot& slot, worker_phase phase);

  /// Wakes as many sleeping workers as there is due work nobody is about
  /// to take, most recently slept first; arms the due timer.
  void on_counts(const queue_counts& counts);

  /// Asks the queue for work on behalf of a waiting worker.
  void request_work(const caf::actor& worker);

  /// Sends `(add_work, record, delay)` to the queue.
  void add_work(work_record record, caf::timespan delay);

  /// Takes the oldest pending exchange if the queue sent the current
  /// message and the exchange is of kind `expected`.
  std::optional<queue_exchange> take_exchange(queue_exchange::kind_type expected);

  /// Handles an error from the queue for its oldest pending exchange.
  void on_queue_error(caf::error& err);

  void dispatch(const caf::actor& worker, work_record record);

  void put_to_sleep(const caf::actor& worker, caf::timespan wait);

  void arm_timer(caf::timespan wait);

  void refresh_counts();

  void on_status(const attempt_id& id, caf::message* result,
                 caf::error* failure);

  void on_down(caf::down_msg& msg);

  /// Completes an operation with an error and forgets it.
  void fail(uint64_t operation_id, caf::error err);

  shepherd_actor* self_ = nullptr;
  shepherd_config cfg_;
  caf::actor queue_;
  /// Messages sent to the queue, oldest first, awaiting their answers.
  std::deque<queue_exchange> exchanges_;
  std::unordered_map<key_type, worker_slot> workers_;
  /// Sleeping workers, most recently slept last.
  std::vector<key_type> sleeping_;
  size_t waiting_ = 0;
  size_t busy_ = 0;
  size_t joined_ = 0;
  std::unordered_map<uint64_t, operation> operations_;
  uint64_t next_operation_ = 1;
  /// When the armed due timer fires, if one is armed.
  std::optional<time_point> timer_at_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  uint64_t failed_ = 0;
};

/// The shepherd actor. Spawned by `spawn_pool`; see docs/protocol.md.
caf::behavior shepherd(shepherd_actor* self, shepherd_config cfg);

} // namespace pool
