#pragma once

// How a pool is published (`remote_options`) and how a node joins one
// (`node_options`); `configure_remote` prepares an actor system for both.
// Plain values with chained setters; `validate()` names the first bad
// field. See docs/remote.md for what each limit defends against.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <caf/actor_system_config.hpp>
#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include "pool/log.hpp"
#include "pool/node_health.hpp"
#include "pool/options.hpp"

namespace pool {

/// How a pool is published. Copy freely, from any thread.
class remote_options {
public:
  /// The shared secret every node and operator must present. Required.
  remote_options& token(std::string x) {
    token_ = std::move(x);
    return *this;
  }

  const std::string& token() const noexcept {
    return token_;
  }

  /// The address to listen on. Default `"127.0.0.1"` (this machine only;
  /// other local users can still connect, see docs/remote.md).
  remote_options& bind_address(std::string x) {
    bind_address_ = std::move(x);
    return *this;
  }

  const std::string& bind_address() const noexcept {
    return bind_address_;
  }

  /// The TCP port; 0 (default) lets the OS pick a free one.
  remote_options& port(uint16_t x) {
    port_ = x;
    return *this;
  }

  uint16_t port() const noexcept {
    return port_;
  }

  /// Sets `SO_REUSEADDR` on the listening socket. Default off.
  remote_options& reuse_address(bool x) {
    reuse_address_ = x;
    return *this;
  }

  bool reuse_address() const noexcept {
    return reuse_address_;
  }

  /// At most this many connections to the published port at a time; one
  /// more is closed at once. Default 64.
  remote_options& max_connections(uint32_t x) {
    max_connections_ = x;
    return *this;
  }

  uint32_t max_connections() const noexcept {
    return max_connections_;
  }

  /// A connection must finish CAF's handshake within `handshake` and
  /// present the token (a join or a control message) within `token` of
  /// connecting, or it is closed. Default 5 s and 10 s.
  remote_options& connection_deadlines(caf::timespan handshake,
                                       caf::timespan token) {
    handshake_timeout_ = handshake;
    token_timeout_ = token;
    return *this;
  }

  caf::timespan handshake_timeout() const noexcept {
    return handshake_timeout_;
  }

  caf::timespan token_timeout() const noexcept {
    return token_timeout_;
  }

  /// The largest BASP message a peer may send (its payload, in bytes); a
  /// longer one closes its connection before CAF allocates the buffer.
  /// Default 16 MiB.
  remote_options& max_message_size(uint32_t x) {
    max_message_size_ = x;
    return *this;
  }

  uint32_t max_message_size() const noexcept {
    return max_message_size_;
  }

  /// At most this many node sessions at a time. Default 32.
  remote_options& max_nodes(uint32_t x) {
    max_nodes_ = x;
    return *this;
  }

  uint32_t max_nodes() const noexcept {
    return max_nodes_;
  }

  /// At most this many workers per node; a node asking for more gets this
  /// many. Default 64.
  remote_options& max_workers_per_node(uint32_t x) {
    max_workers_per_node_ = x;
    return *this;
  }

  uint32_t max_workers_per_node() const noexcept {
    return max_workers_per_node_;
  }

  /// A remote attempt running longer fails (`pool.timed_out`; the retry
  /// policy applies) and the node replaces that worker. Default 5 min.
  remote_options& attempt_timeout(caf::timespan x) {
    attempt_timeout_ = x;
    return *this;
  }

  caf::timespan attempt_timeout() const noexcept {
    return attempt_timeout_;
  }

  /// A node whose attempts fault `after` times in a row (timeouts, results
  /// of the wrong type; not errors of the job itself) gets no work for
  /// `duration`. Default 3 in a row, 30 s.
  remote_options& quarantine(uint32_t after, caf::timespan duration) {
    quarantine_after_ = after;
    quarantine_for_ = duration;
    return *this;
  }

  uint32_t quarantine_after() const noexcept {
    return quarantine_after_;
  }

  caf::timespan quarantine_for() const noexcept {
    return quarantine_for_;
  }

  /// Node health (docs/remote.md, "Node health"): a node whose failure
  /// share over its last `window` attempts is at least `margin` above the
  /// other nodes' pooled share, both with at least `min_sample` outcomes,
  /// is quarantined (for `quarantine`'s duration); its failures while it
  /// looks so are given back. Default 64, 16, 0.5.
  remote_options& health(uint32_t window, uint32_t min_sample, double margin) {
    health_.window = window;
    health_.min_sample = min_sample;
    health_.margin = margin;
    return *this;
  }

  /// A node with an attempt out that sends nothing (no result, no
  /// heartbeat; nodes send one every `node_options::heartbeat`, 1 s by
  /// default, while they work) for this long is dropped, and its attempts
  /// go back unstarted. 0: never. Default 10 s.
  remote_options& silent_after(caf::timespan x) {
    health_.silent_after = x;
    return *this;
  }

  caf::timespan silent_after() const noexcept {
    return health_.silent_after;
  }

  /// The health bounds, as set by `health` and `silent_after`.
  const node_health_limits& health() const noexcept {
    return health_;
  }

  /// The largest size an operator's `resize` may ask for. Default 1024.
  remote_options& max_resize(uint64_t x) {
    max_resize_ = x;
    return *this;
  }

  uint64_t max_resize() const noexcept {
    return max_resize_;
  }

  /// How long the gatekeeper waits for the shepherd to accept a stand-in
  /// or answer a stats or cancel request. Default 10 s.
  remote_options& join_timeout(caf::timespan x) {
    join_timeout_ = x;
    return *this;
  }

  caf::timespan join_timeout() const noexcept {
    return join_timeout_;
  }

  /// A name for log lines; default `"remote"`.
  remote_options& name(std::string x) {
    name_ = std::move(x);
    return *this;
  }

  const std::string& name() const noexcept {
    return name_;
  }

  /// Where the gatekeeper's log lines go (refusals at a bounded rate,
  /// joins). Default: `default_log_hook()`.
  remote_options& log(log_hook hook) {
    log_ = std::move(hook);
    return *this;
  }

  /// The hook set with `log`, or the default one.
  log_hook log() const;

  /// Returns `pool_errc::invalid_option` naming the bad field, or none.
  caf::error validate() const;

private:
  std::string token_;
  std::string bind_address_ = "127.0.0.1";
  uint16_t port_ = 0;
  bool reuse_address_ = false;
  uint32_t max_connections_ = 64;
  caf::timespan handshake_timeout_ = std::chrono::seconds(5);
  caf::timespan token_timeout_ = std::chrono::seconds(10);
  uint32_t max_message_size_ = 16u << 20;
  uint32_t max_nodes_ = 32;
  uint32_t max_workers_per_node_ = 64;
  caf::timespan attempt_timeout_ = std::chrono::minutes(5);
  uint32_t quarantine_after_ = 3;
  caf::timespan quarantine_for_ = std::chrono::seconds(30);
  node_health_limits health_;
  uint64_t max_resize_ = 1024;
  caf::timespan join_timeout_ = std::chrono::seconds(10);
  std::string name_ = "remote";
  log_hook log_;
};

/// How a node joins a remote pool. Plain value.
class node_options {
public:
  /// Cooperative (default) or dedicated workers, as in `pool_options`.
  node_options& kind(worker_kind x) {
    kind_ = x;
    return *this;
  }

  worker_kind kind() const noexcept {
    return kind_;
  }

  /// Delay before reconnecting after the pool was lost or could not be
  /// reached: `initial`, doubled after each failure, at most `max`.
  /// Default 100 ms, 5 s.
  node_options& reconnect(caf::timespan initial, caf::timespan max) {
    reconnect_initial_ = initial;
    reconnect_max_ = max;
    return *this;
  }

  caf::timespan reconnect_initial() const noexcept {
    return reconnect_initial_;
  }

  caf::timespan reconnect_max() const noexcept {
    return reconnect_max_;
  }

  /// Longest a connect or a join may take before it counts as failed.
  /// Default 10 s.
  node_options& join_timeout(caf::timespan x) {
    join_timeout_ = x;
    return *this;
  }

  caf::timespan join_timeout() const noexcept {
    return join_timeout_;
  }

  /// After losing the pool, stop trying (the node exits with the last
  /// error, once its workers have terminated) once it could not rejoin for
  /// this long. Default: never stop.
  node_options& give_up_after(caf::timespan x) {
    give_up_after_ = x;
    return *this;
  }

  std::optional<caf::timespan> give_up_after() const noexcept {
    return give_up_after_;
  }

  /// While one of its workers runs an attempt, the node tells the pool it
  /// is alive this often (`node_alive`): keep it well below the pool's
  /// `silent_after` (a third at most). Default 1 s.
  node_options& heartbeat(caf::timespan x) {
    heartbeat_ = x;
    return *this;
  }

  caf::timespan heartbeat() const noexcept {
    return heartbeat_;
  }

  /// When the pool stops on purpose (its gatekeeper ends with
  /// `exit_reason::normal` or `user_shutdown`, e.g. after a drain), stop the
  /// workers and end the node normally instead of rejoining. A lost
  /// connection is still rejoined. Default off.
  node_options& leave_when_pool_stops(bool x) {
    leave_when_pool_stops_ = x;
    return *this;
  }

  bool leave_when_pool_stops() const noexcept {
    return leave_when_pool_stops_;
  }

  /// A name for log lines; default `"node"`.
  node_options& name(std::string x) {
    name_ = std::move(x);
    return *this;
  }

  const std::string& name() const noexcept {
    return name_;
  }

  /// Where the node's log lines go (joined, lost, reconnecting). Default:
  /// `default_log_hook()`.
  node_options& log(log_hook hook) {
    log_ = std::move(hook);
    return *this;
  }

  log_hook log() const;

  caf::error validate() const;

private:
  worker_kind kind_ = worker_kind::cooperative;
  caf::timespan reconnect_initial_ = std::chrono::milliseconds(100);
  caf::timespan reconnect_max_ = std::chrono::seconds(5);
  caf::timespan join_timeout_ = std::chrono::seconds(10);
  std::optional<caf::timespan> give_up_after_;
  caf::timespan heartbeat_ = std::chrono::seconds(1);
  bool leave_when_pool_stops_ = false;
  std::string name_ = "node";
  log_hook log_;
};

/// Configures an actor system for remote pools: everything
/// `pool::configure` does, plus the remote type-ID block, the remote error
/// category, CAF's network module (`caf::io::middleman`) and BASP
/// heartbeats (1 s; a peer silent for 10 s is dropped, so a node that
/// vanishes without closing its connection is noticed). Call it once from
/// your config's constructor instead of `pool::configure`, and do not load
/// `caf::io::middleman` again (e.g. through `CAF_MAIN(caf::io::middleman)`).
void configure_remote(caf::actor_system_config& cfg);

} // namespace pool
