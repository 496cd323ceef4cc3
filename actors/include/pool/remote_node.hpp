#pragma once

// The node's side of the remote layer: a node actor that joins a published
// pool and runs its attempts on local workers. The node actor is the only
// handle the node sends; its workers are local to it and never cross the
// wire. See docs/remote.md.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/timespan.hpp>

#include "pool/gatekeeper.hpp"
#include "pool/remote_options.hpp"
#include "pool/dedicated_worker.hpp"
#include "pool/worker.hpp"

namespace pool {

namespace detail {

/// Everything a node needs; filled in by `join_remote_pool`.
struct node_config {
  std::string host;
  uint16_t port = 0;
  std::string token;
  size_t workers = 0;
  /// Spawns one local worker running the job.
  std::function<caf::actor(caf::actor_system&)> spawn_worker;
  node_options options;
};

/// Validates `cfg`, spawns the node actor and waits for its first join.
caf::expected<caf::actor> start_node(caf::actor_system& sys, node_config cfg);

/// Spawns the node actor (it starts joining at once); `first_outcome_to`
/// hears `(node_join, caf::error)` once the first join ended.
caf::actor spawn_node_actor(caf::actor_system& sys, node_config cfg,
                            caf::actor first_outcome_to);

} // namespace detail

/// Joins the pool published at `host`:`port` with `n` local workers running
/// `fn` (`Out(In...)` or `caf::expected<Out>(In...)`, as for `spawn_pool`;
/// cooperative or dedicated per `opts.kind()`); the pool may grant fewer
/// (its `max_workers_per_node`). Returns the node actor, which keeps the
/// workers alive: when the connection to the pool drops it stops them,
/// reconnects with backoff and joins again with fresh workers; a worker
/// that dies is replaced. Leave with `leave_remote_pool` before the actor
/// system is destroyed.
///
/// Blocks until the first join is answered (at most `opts.join_timeout()`
/// for the connect plus the same for the join): returns the gatekeeper's
/// refusal (`pool_rmt.refused`, `pool_rmt.limit`), the connection error,
/// or `pool.invalid_option` for bad arguments or inputs/results that `sys`
/// cannot serialize. Also removes CAF's "SpawnServ" and "ConfigServ" from
/// the actor registry (see `publish_gatekeeper`). Do not call from an
/// actor.
template <class F>
caf::expected<caf::actor>
join_remote_pool(caf::actor_system& sys, std::string host, uint16_t port,
                 std::string token, size_t n, F fn, node_options opts = {}) {
  auto unknown = detail::unsendable_types<F>(sys);
  if (!unknown.empty())
    return detail::unsendable_error("join", unknown);
  detail::node_config cfg;
  cfg.host = std::move(host);
  cfg.port = port;
  cfg.token = std::move(token);
  cfg.workers = n;
  auto dedicated = opts.kind() == worker_kind::dedicated;
  cfg.spawn_worker = [fn, dedicated](caf::actor_system& sys) {
    if (dedicated)
      return spawn_dedicated_worker(
          sys, [fn](auto* self) { return worker_actor<F>(self, fn); });
    return sys.spawn(worker_actor<F>, fn);
  };
  cfg.options = std::move(opts);
  return detail::start_node(sys, std::move(cfg));
}

/// Makes `node` (from `join_remote_pool`) leave its pool: it tells the
/// gatekeeper (the pool retries elsewhere what its workers held), stops its
/// workers, and once they terminated the node stops. Blocks for at most
/// about twice `timeout`; do not call from an actor. Afterwards the actor
/// system may be destroyed at once.
///
/// An exit sent to the node by a local actor (any reason but `kill`) ends
/// it the same way, with that reason. Exits from the network, and
/// anonymous ones (`anon_send_exit`, which a network peer can forge), are
/// dropped.
caf::error leave_remote_pool(caf::actor_system& sys, const caf::actor& node,
                             caf::timespan timeout = std::chrono::seconds(10));

} // namespace pool
