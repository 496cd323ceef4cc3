#pragma once

// The port guard: what stands between a published port and CAF's BASP
// broker. CAF 0.17.6 lets any peer that reaches the port send messages
// before its handshake, claim another node's identity (and take over its
// route), forge "actor died" messages for any node, route messages through
// the pool's process to other nodes, make CAF allocate 4 GiB with one
// header, and hold connections forever. The guard sits in the connection
// (its own doorman and scribes in CAF's multiplexer) and reads every BASP
// header a peer sends before the broker does; a connection that breaks one
// of its rules is closed, and CAF's broker never sees the offending bytes.
// See docs/remote.md ("What the port guard enforces").

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/expected.hpp>
#include <caf/node_id.hpp>
#include <caf/timespan.hpp>

#include "pool/log.hpp"
#include "pool/remote_types.hpp"

namespace pool::detail {

/// The guard's limits (from `remote_options`).
struct guard_limits {
  uint32_t max_connections = 64;
  caf::timespan handshake_timeout = std::chrono::seconds(5);
  caf::timespan token_timeout = std::chrono::seconds(10);
  uint32_t max_message_size = 16u << 20;
};

class guarded_scribe;

/// Shared by the doormen, scribes and warden of one gatekeeper. Its
/// connection table is touched only in CAF's multiplexer thread; the
/// counters may be read from any thread.
class port_guard : public std::enable_shared_from_this<port_guard> {
public:
  port_guard(guard_limits limits, caf::node_id self);

  ~port_guard();

  // -- any thread ------------------------------------------------------------

  /// Adds the guard's counters to `x`.
  void add_counters(gatekeeper_stats& x) const;

  /// The node `peer` presented the token: its connection stays open.
  /// Posts to the multiplexer thread of `sys`.
  void authenticated(caf::actor_system& sys, const caf::node_id& peer);

  /// Closes the connections past their deadlines. Posts to the
  /// multiplexer thread of `sys` (the warden calls it every tick).
  void expire(caf::actor_system& sys);

  const guard_limits& limits() const noexcept {
    return limits_;
  }

  /// Whether the warden was started (set once, by `publish_guarded`).
  std::atomic<bool> warden_started{false};

  // -- multiplexer thread only ------------------------------------------------

  /// Whether one more connection fits; counts a refusal when not.
  bool admit();

  /// An accepted socket under a number no recent connection had (the
  /// original is closed); `fd` itself when no such number is free.
  /// CAF 0.17.6 names a connection by its socket number and cleans up a
  /// closed connection's BASP state later, through its worker queue: a new
  /// connection that reuses the number before that loses its state and is
  /// dropped (under load, a stranger's closed connection took the next
  /// legitimate one with it). Numbers therefore rotate through the upper
  /// half of the descriptor limit (at most 4096).
  int renumber(int fd);

  /// A connection was accepted.
  void opened(guarded_scribe* conn);

  /// A connection ended (closed by either side).
  void closed(guarded_scribe* conn);

  /// A connection's handshake names `peer`: false (and the connection must
  /// close) when that is this node, no node, or a node another open
  /// connection already claims.
  bool claim(guarded_scribe* conn, const caf::node_id& peer);

  /// Why a connection was closed, for the counters.
  enum class close_reason { no_handshake, no_token, protocol };

  void count_close(close_reason why);

  const caf::node_id& self() const noexcept {
    return self_;
  }

private:
  void expire_now(caf::execution_unit* ctx);

  guard_limits limits_;
  caf::node_id self_;
  std::unordered_map<guarded_scribe*, int> open_; // value unused
  std::unordered_map<caf::node_id, guarded_scribe*> by_node_;
  unsigned next_number_ = 0;
  std::atomic<uint64_t> open_count_{0};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> closed_no_handshake_{0};
  std::atomic<uint64_t> closed_no_token_{0};
  std::atomic<uint64_t> closed_protocol_{0};
};

/// Publishes `whom` on `address`:`port` behind `guard` and returns the
/// bound port; starts the guard's warden (one per guard: it closes late
/// connections and logs the guard's refusals at a bounded rate) on the
/// first call. Does not block. The actor system must run CAF's default
/// multiplexer.
caf::expected<uint16_t>
publish_guarded(caf::actor_system& sys, const caf::actor& whom,
                std::shared_ptr<port_guard> guard, uint16_t port,
                const std::string& address, bool reuse_address, log_hook log,
                std::string log_name);

/// Removes CAF's "SpawnServ" and "ConfigServ" from the actor registry (by
/// name and by id): with them, any BASP peer may spawn registered actor
/// types and read or write the system's configuration server, and
/// `(get, name)` hands out the handle of any named actor. The pool uses
/// neither. Idempotent.
void forget_named_actors(caf::actor_system& sys);

} // namespace pool::detail

// Only ever passed between local actors (no inspect: CAF refuses to send
// it over the network).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<pool::detail::port_guard>)
