#pragma once

// Stand-ins: for each remote worker of a node session, a local actor that
// joins the shepherd as an ordinary joined worker and speaks the worker
// protocol to it. Work goes to the node with the gatekeeper as sender (so
// no stand-in and no shepherd handle ever crosses the wire); results come
// back through the gatekeeper, which checks the session, to the stand-in,
// which checks the attempt and the result type before the shepherd sees
// them. A remote attempt that outlives `attempt_timeout` fails here.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/expected.hpp>
#include <caf/message.hpp>
#include <caf/timespan.hpp>

#include "pool/node_health.hpp"
#include "pool/remote_session.hpp"
#include "pool/work_record.hpp"

namespace pool::detail {

/// Whether a result holds the job's result type (see `result_is`).
using result_check = bool (*)(const caf::message&);

/// The check for a job returning `Out` (`caf::unit_t` for `void`).
template <class Out>
bool result_is(const caf::message& x) {
  return x.match_elements<Out>();
}

/// What a stand-in needs. Plain value.
struct stand_in_config {
  /// The shepherd it joins.
  caf::actor pool;
  /// The sender of every message toward the node; the stand-in ends with it.
  caf::actor gatekeeper;
  /// The node actor (remote) and its session.
  caf::actor node;
  std::string secret;
  uint64_t session = 0;
  /// The node's worker this stand-in speaks for.
  uint32_t slot = 0;
  caf::timespan attempt_timeout{0};
  caf::timespan join_timeout{0};
  /// Null: any single value passes (callers that cannot name the job).
  result_check check = nullptr;
  /// The result type's name, for `pool_rmt.bad_result`.
  std::string result_type;
};

/// Spawns a stand-in; it joins nothing by itself (the gatekeeper sends the
/// shepherd `join_pool`). Does not block.
caf::actor spawn_stand_in(caf::actor_system& sys, stand_in_config cfg);

/// A gatekeeper's open node sessions and the stand-ins of their workers.
/// Owned by the gatekeeper and used from its handlers only (`self` is the
/// gatekeeper); decisions come from its `session_book`.
class node_sessions {
public:
  /// A joined node: its actor (the only handle it sent), its secret, and
  /// the stand-ins of its workers (none while quarantined).
  struct session {
    uint64_t id = 0;
    caf::actor node;
    std::string secret;
    uint32_t workers = 0;
    std::vector<caf::actor> stand_ins;
  };

  /// `proto` holds what every stand-in shares (pool, timeouts, check).
  node_sessions(session_limits limits, node_health_limits health,
                stand_in_config proto)
      : book_(limits), health_(health), proto_(std::move(proto)) {
    // nop
  }

  /// Opens a session for `node` asking for `wanted` workers (ending an
  /// earlier one of the same node actor): the session, or
  /// `pool_rmt.limit`. The stand-ins start with `start`.
  caf::expected<session*> open(caf::event_based_actor* self,
                               const caf::actor& node, uint32_t wanted);

  /// Spawns the session's stand-ins and has the shepherd take them.
  void start(caf::event_based_actor* self, session& s);

  /// The session of `sender` if `secret` is its secret.
  session* find(const caf::strong_actor_ptr& sender, const std::string& secret);

  /// Ends the session of `node` (if any), stopping its stand-ins with
  /// `reason`; returns whether there was one.
  bool end(caf::event_based_actor* self, const caf::actor_addr& node,
           const caf::error& reason);

  /// Ends every session.
  void end_all(caf::event_based_actor* self, const caf::error& reason);

  /// Records how an attempt of session `id`'s worker `slot` ended. When that
  /// starts a quarantine, stops the session's stand-ins, arms the timer
  /// `(rmt_free, id)` and returns the session.
  session* note(caf::event_based_actor* self, uint64_t id, uint32_t slot,
                attempt_note what);

  /// The quarantine timer of `id` fired: fresh stand-ins if it is over.
  /// Returns the session when it gets work again.
  session* release(caf::event_based_actor* self, uint64_t id);

  // -- node health (remote_health.cpp) ----------------------------------------

  /// A stand-in's `(rmt_run, session, slot, record)`: sends the attempt to
  /// the node, or hands it back to `stand_in` (`rmt_back`) when the node
  /// must not run it (node health) or the session is gone. Returns
  /// whether it was handed back for node health.
  bool run(caf::event_based_actor* self, const caf::actor& stand_in,
           uint64_t id, uint32_t slot, work_record& record);

  /// What to do with an outcome of session `s`'s worker `slot`, and the
  /// quarantine of an outlier node (its stand-ins stop: give back what
  /// they hold).
  node_health::verdict outcome(caf::event_based_actor* self, session& s,
                               uint32_t slot, const attempt_id& attempt,
                               bool failed);

  /// A heartbeat of session `s`.
  void heard(const session& s);

  /// Ends the sessions of silent nodes (their stand-ins give back what
  /// they hold; each node is told `node_bye` and joins again); returns
  /// their nodes.
  std::vector<caf::actor_addr> drop_silent(caf::event_based_actor* self);

  const node_health& health() const noexcept {
    return health_;
  }

  size_t size() const noexcept {
    return sessions_.size();
  }

  /// Stand-ins running now.
  uint64_t stand_ins() const noexcept {
    return running_;
  }

  const session_limits& limits() const noexcept {
    return book_.limits();
  }

private:
  void stop(session& s, const caf::error& reason);

  /// Asks stand-ins of `nodes` to ask the shepherd for work.
  void nudge(caf::event_based_actor* self, const std::vector<uint64_t>& nodes);

  /// Stops the stand-ins of quarantined session `s` and arms its timer.
  void quarantined(caf::event_based_actor* self, session& s);

  session_book book_;
  node_health health_;
  stand_in_config proto_;
  std::map<caf::actor_addr, session> sessions_;
  std::map<uint64_t, caf::actor_addr> by_id_;
  uint64_t running_ = 0;
};

/// An error from a node as the shepherd may keep it: code and category
/// kept, at most 16 context elements, and those that name actors (actor
/// handles, messages) turned into text, so that no handle from the wire
/// travels on to callers. Other values (a job's own types) stay.
caf::error sanitize_remote_error(const caf::error& err);

} // namespace pool::detail
