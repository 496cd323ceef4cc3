#pragma once

// The remote layer's wire vocabulary: its counters, its error category and
// its type-ID block (every atom it sends). docs/remote.md documents each
// message with its sender, receiver and fields.

#include <cstdint>
#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>

#include "pool/type_ids.hpp"

namespace pool {

/// A gatekeeper's counters, answered to `(pool_ctl, token, gk_stats)`.
/// Every refusal of the remote layer is counted here.
struct gatekeeper_stats {
  /// `node_join`s accepted, and the remote workers they brought.
  uint64_t joins_accepted = 0;
  uint64_t workers_joined = 0;
  /// `node_join`s refused for a wrong or missing token.
  uint64_t joins_refused = 0;
  /// `node_join`s refused by a limit (`max_nodes`), and workers not granted
  /// (beyond `max_workers_per_node`).
  uint64_t joins_limited = 0;
  uint64_t workers_limited = 0;
  /// Control messages answered, and refused ones (wrong token, or a resize
  /// beyond `max_resize`).
  uint64_t controls_accepted = 0;
  uint64_t controls_refused = 0;
  /// Node sessions open now, and the remote workers they hold.
  uint64_t sessions = 0;
  uint64_t remote_workers = 0;
  /// Messages naming no open session (unknown sender, wrong secret).
  uint64_t forged = 0;
  /// Results for an attempt the stand-in no longer holds (after a timeout,
  /// a quarantine, a session's end): dropped.
  uint64_t stale_results = 0;
  /// Results of the wrong type (not the job's result): failed attempts.
  uint64_t wrong_results = 0;
  /// Remote attempts that ran longer than `attempt_timeout`.
  uint64_t timeouts = 0;
  /// Times a node was quarantined (repeated faults, or an outlier).
  uint64_t quarantines = 0;
  /// Of those, times for failing far more often than the other nodes
  /// (docs/remote.md, "Node health").
  uint64_t outliers = 0;
  /// Failed attempts given back to the queue without using up an attempt:
  /// the node failed far more often than the others. (Attempts held by a
  /// node that is quarantined or dropped silent go back too; the pool
  /// counts all of them as `snoozed`.)
  uint64_t given_back = 0;
  /// Attempts a node did not get because it had failed their operation
  /// before and another node could take it.
  uint64_t avoided = 0;
  /// Nodes dropped for silence (an attempt out, no sign of life).
  uint64_t silent = 0;
  /// Messages of any other shape, exit messages, forged down messages and
  /// messages with a forwarding stack: dropped.
  uint64_t dropped = 0;
  /// The published port: connections open now, accepted in all, refused
  /// at `max_connections`, closed for not finishing CAF's handshake in
  /// time, for not presenting the token in time, and for breaking the
  /// rules of the port guard (see docs/remote.md).
  uint64_t connections = 0;
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;
  uint64_t closed_no_handshake = 0;
  uint64_t closed_no_token = 0;
  uint64_t closed_protocol = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gatekeeper_stats& x) {
  return f(caf::meta::type_name("pool::gatekeeper_stats"), x.joins_accepted,
           x.workers_joined, x.joins_refused, x.joins_limited,
           x.workers_limited, x.controls_accepted, x.controls_refused,
           x.sessions, x.remote_workers, x.forged, x.stale_results,
           x.wrong_results, x.timeouts, x.quarantines, x.outliers, x.given_back,
           x.avoided, x.silent, x.dropped, x.connections,
           x.connections_accepted, x.connections_refused, x.closed_no_handshake,
           x.closed_no_token, x.closed_protocol);
}

/// One line, `key=value` pairs.
std::string to_string(const gatekeeper_stats& x);

/// Errors of the remote layer. Stable values: they cross the network.
enum class remote_errc : uint8_t {
  /// Not an error.
  none = 0,
  /// The gatekeeper refused a join or control message: wrong or missing
  /// token. Context: (what was refused).
  refused = 1,
  /// The gatekeeper refused a join or a resize for a limit
  /// (`max_nodes`, `max_resize`). Context: (what, the limit).
  limit = 2,
  /// A remote worker returned a value that is not the job's result type:
  /// the attempt failed. Context: (expected type, what came).
  bad_result = 3,
  /// The node's attempts kept failing (timeouts, results of the wrong
  /// type): it gets no work for a while. The exit reason of its stand-ins,
  /// so it appears in the attempt history. Context: (node, how long).
  quarantined = 4,
  /// The node had an attempt out and sent nothing (no result, no
  /// heartbeat) for `silent_after`: its session was dropped, its attempts
  /// went back unstarted. Context: (node, the bound).
  silent = 5,
};

/// Returns `"refused"`, `"limit"`, `"bad_result"`, `"quarantined"`,
/// `"silent"` (or `"none"`).
std::string to_string(remote_errc x);

/// The category atom under which `remote_errc` values travel.
constexpr caf::atom_value remote_error_category = caf::atom("pool_rmt");

/// Renders an error of the remote category:
/// `pool_rmt.refused: node_join: wrong or missing token`.
std::string render_remote_error(uint8_t code, caf::atom_value category,
                                const caf::message& context);

/// As `pool::describe`, and also renders the remote category. Safe from
/// any thread.
std::string describe_remote(const caf::error& err);

} // namespace pool

CAF_ERROR_CODE_ENUM(pool::remote_errc, "pool_rmt")

// The remote layer's type-ID block, appended to the pool's; registered by
// `pool::configure_remote`. (Atoms need no ID in CAF 0.17.6; they are
// declared here so that every name the remote layer sends is in one place.)
CAF_BEGIN_TYPE_ID_BLOCK(pool_remote, caf::id_block::pool::end)

CAF_ADD_TYPE_ID(pool_remote, (pool::gatekeeper_stats))

/// node -> gatekeeper: `(node_join, std::string token, uint32_t workers)`;
/// replies `(node_join, std::string secret, uint32_t granted)`: the
/// session's secret, which the node puts in every later message, and how
/// many workers it may run; or `pool_rmt.refused` / `pool_rmt.limit`.
CAF_ADD_ATOM(pool_remote, pool, node_join_atom, "node_join")
/// gatekeeper -> node: `(node_run, secret, uint32_t slot, work_record)`:
/// run one attempt on the node's worker `slot`.
CAF_ADD_ATOM(pool_remote, pool, node_run_atom, "node_run")
/// node -> gatekeeper: `(node_done, secret, uint32_t slot, attempt_id,
/// caf::message result)` or `(node_done, secret, slot, attempt_id,
/// caf::error)`: the outcome of the attempt worker `slot` ran.
CAF_ADD_ATOM(pool_remote, pool, node_done_atom, "node_done")
/// gatekeeper -> node: `(node_drop, secret, uint32_t slot)`: the attempt
/// of worker `slot` timed out; replace that worker.
CAF_ADD_ATOM(pool_remote, pool, node_drop_atom, "node_drop")
/// node -> gatekeeper: `(node_bye, secret)`: the node leaves; its session
/// ends.
CAF_ADD_ATOM(pool_remote, pool, node_bye_atom, "node_bye")
/// operator -> gatekeeper: `(pool_ctl, std::string token, command...)`
/// with command `pool_stats` | `resize, uint64_t` | `drain` |
/// `drain, timespan` | `cancel_op, uint64_t` | `gk_stats`.
CAF_ADD_ATOM(pool_remote, pool, control_atom, "pool_ctl")
/// Control command: the gatekeeper's own counters (`gatekeeper_stats`).
CAF_ADD_ATOM(pool_remote, pool, gatekeeper_stats_atom, "gk_stats")
/// Node internal: time to try connecting and joining again.
CAF_ADD_ATOM(pool_remote, pool, rejoin_atom, "node_retry")
/// `(node_leave)` to a node, from a local actor: leave the pool and stop;
/// replies an empty message once the workers terminated (see
/// `leave_remote_pool`).
CAF_ADD_ATOM(pool_remote, pool, node_leave_atom, "node_leave")
/// Stand-in internal: `(rmt_tmo, attempt_id, uint64_t seq)`, the remote
/// attempt's time is up.
CAF_ADD_ATOM(pool_remote, pool, remote_timeout_atom, "rmt_tmo")
/// Stand-in -> gatekeeper (local): `(rmt_note, uint64_t session,
/// uint32_t slot, uint8_t what)`, how an attempt ended (see
/// `detail::attempt_note`).
CAF_ADD_ATOM(pool_remote, pool, remote_note_atom, "rmt_note")
/// Gatekeeper internal: `(rmt_free, uint64_t session)`, a quarantine ends.
CAF_ADD_ATOM(pool_remote, pool, remote_free_atom, "rmt_free")
/// Local only: `(rmt_guard)` to a gatekeeper replies its port guard.
CAF_ADD_ATOM(pool_remote, pool, remote_guard_atom, "rmt_guard")
/// Port guard internal: the warden's tick. Gatekeeper internal: time to
/// look for silent nodes.
CAF_ADD_ATOM(pool_remote, pool, remote_tick_atom, "rmt_tick")
/// node -> gatekeeper: `(node_alive, secret)`, a heartbeat, every
/// `node_options::heartbeat` while one of the node's workers runs an
/// attempt. gatekeeper -> node:
/// `(node_bye, secret)` ends the session from the pool's side (the node
/// joins again).
CAF_ADD_ATOM(pool_remote, pool, node_alive_atom, "node_alive")
/// Stand-in -> gatekeeper (local): `(rmt_run, uint64_t session, uint32_t
/// slot, work_record)`, an attempt for the node, which the gatekeeper
/// sends on or hands back.
CAF_ADD_ATOM(pool_remote, pool, remote_run_atom, "rmt_run")
/// Gatekeeper -> stand-in (local): `(rmt_back, attempt_id, timespan)`,
/// give that attempt back to the queue without using it up, and ask for
/// work again only after the delay (0: at once).
CAF_ADD_ATOM(pool_remote, pool, remote_back_atom, "rmt_back")

CAF_END_TYPE_ID_BLOCK(pool_remote)
