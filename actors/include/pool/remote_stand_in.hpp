#pragma once

// Stand-ins: for each remote worker of a node session, a local actor that
// joins the shepherd as an ordinary joined worker and speaks the worker
// protocol to it. Work goes to the node with the gatekeeper as sender (so
// no stand-in and no shepherd handle ever crosses the wire); results come
// back through the gatekeeper, which checks the session, to the stand-in,
// which checks the attempt and the result type before the shepherd sees
// them. A remote attempt that outlives `attempt_timeout` fails here.

#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>
#include <caf/timespan.hpp>

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

/// An error from a node as the shepherd may keep it: code and category
/// kept, context reduced to at most 8 strings of at most 4096 characters
/// (no actor handles or other values from the wire travel on).
caf::error sanitize_remote_error(const caf::error& err);

} // namespace pool::detail
