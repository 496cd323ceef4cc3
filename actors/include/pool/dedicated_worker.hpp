#pragma once

// A worker with a thread of its own: the `worker_kind::dedicated` workers
// of a pool (see worker.hpp for the state machine they run).

#include <functional>

#include <caf/actor_system.hpp>
#include <caf/spawn_options.hpp>
#include <caf/stateful_actor.hpp>

#include "pool/worker.hpp"

namespace pool {

/// A worker with a thread of its own (`worker_kind::dedicated`), whose
/// behavior `init` makes. It counts as a running actor of its system until
/// it is destroyed, not only until its cleanup begins, so `~actor_system`
/// (`await_all_actors_done`) waits for its thread to be through with it.
/// Why: CAF 0.17.6 takes an actor out of the registry first in its cleanup
/// and cancels its timeouts after, through the clock's 64-entry ring buffer;
/// `~actor_system` stops the clock once the registry is empty, and then the
/// cleanups still to come fill that buffer and block for ever (so does
/// `~actor_system`, waiting for their threads). Costs nothing per job.
class dedicated_worker final : public caf::stateful_actor<worker_state> {
public:
  using init_function =
      std::function<caf::behavior(caf::stateful_actor<worker_state>*)>;

  dedicated_worker(caf::actor_config& cfg, init_function init)
      : caf::stateful_actor<worker_state>(cfg), init_(std::move(init)) {
    home_system().registry().inc_running();
  }

  ~dedicated_worker() override {
    home_system().registry().dec_running();
  }

  caf::behavior make_behavior() override {
    auto init = std::move(init_);
    return init(this);
  }

private:
  init_function init_;
};

/// Spawns a `dedicated_worker` whose behavior `init` makes. Does not
/// block; callable from any thread.
inline caf::actor spawn_dedicated_worker(caf::actor_system& sys,
                                         dedicated_worker::init_function init) {
  return sys.spawn<dedicated_worker, caf::detached>(std::move(init));
}

} // namespace pool
