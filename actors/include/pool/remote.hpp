#pragma once

// Remote workers over CAF's network layer (caf::io): a pool published
// behind a gatekeeper that checks a shared token, and nodes on other
// machines whose workers join it and speak the ordinary worker protocol.
// Operators reach the same gatekeeper with `(pool_ctl, token, ...)`.
// See docs/remote.md for message shapes, security and failure behaviour.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/timespan.hpp>
#include <caf/type_id.hpp>

#include "pool/errors.hpp"
#include "pool/log.hpp"
#include "pool/options.hpp"
#include "pool/spawn.hpp"
#include "pool/type_ids.hpp"
#include "pool/worker.hpp"

namespace pool {

/// A gatekeeper's counters, answered to `(pool_ctl, token, gk_stats)`.
struct gatekeeper_stats {
  /// `node_join`s accepted, and the workers they brought.
  uint64_t joins_accepted = 0;
  uint64_t workers_joined = 0;
  /// `node_join`s refused for a wrong or missing token.
  uint64_t joins_refused = 0;
  /// Control messages forwarded to the shepherd, and refused ones (wrong
  /// token).
  uint64_t controls_accepted = 0;
  uint64_t controls_refused = 0;
  /// Messages of any other shape (malformed, unexpected): dropped.
  uint64_t dropped = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gatekeeper_stats& x) {
  return f(caf::meta::type_name("pool::gatekeeper_stats"), x.joins_accepted,
           x.workers_joined, x.joins_refused, x.controls_accepted,
           x.controls_refused, x.dropped);
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
};

/// Returns `"refused"` (or `"none"`).
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

/// node -> gatekeeper: `(node_join, std::string token,
/// std::vector<caf::actor> workers)`; replies an empty message once every
/// worker joined the shepherd, or `pool_remote.refused`.
CAF_ADD_ATOM(pool_remote, pool, node_join_atom, "node_join")
/// operator -> gatekeeper: `(pool_ctl, std::string token, command...)`
/// with command `pool_stats` | `resize, uint64_t` | `drain` |
/// `drain, timespan` | `cancel_op, uint64_t` | `gk_stats`.
CAF_ADD_ATOM(pool_remote, pool, control_atom, "pool_ctl")
/// Control command: the gatekeeper's own counters (`gatekeeper_stats`).
CAF_ADD_ATOM(pool_remote, pool, gatekeeper_stats_atom, "gk_stats")
/// Node internal: time to try connecting and joining again.
CAF_ADD_ATOM(pool_remote, pool, rejoin_atom, "node_retry")
/// `(node_leave)` to a node: stop the workers and leave; replies an empty
/// message once they terminated (see `leave_remote_pool`).
CAF_ADD_ATOM(pool_remote, pool, node_leave_atom, "node_leave")

CAF_END_TYPE_ID_BLOCK(pool_remote)

namespace pool {

/// Certificate files for TLS (CAF's OpenSSL module). With any of them set,
/// CAF requires a valid certificate from *both* peers (mutual TLS): each
/// side presents `certificate`/`key` and accepts peers signed by `cafile`.
struct tls_files {
  /// PEM certificate chain of this process.
  std::string certificate;
  /// PEM private key of `certificate`.
  std::string key;
  /// PEM file of the certificate authorities whose peers are accepted.
  std::string cafile;
  /// Passphrase of `key`, if it is encrypted.
  std::string passphrase;
};

/// How a pool is published. Chained setters; `validate()` names the first
/// bad field. Plain value: copy freely, from any thread.
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

  /// The address to listen on. Default `"127.0.0.1"` (this machine only);
  /// `"0.0.0.0"` or an interface's address to accept other machines.
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

  /// Publishes through CAF's OpenSSL module. The actor system must have
  /// been configured with `configure_remote_tls(cfg, files)` with the same
  /// files (CAF reads them from the system's configuration). Default: plain
  /// TCP.
  remote_options& tls(tls_files x) {
    tls_ = std::move(x);
    return *this;
  }

  const std::optional<tls_files>& tls() const noexcept {
    return tls_;
  }

  /// How long the gatekeeper waits for the shepherd to accept a joining
  /// worker. Default 10 s.
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

  /// Where the gatekeeper's log lines go (refusals, joins). Default:
  /// `default_log_hook()`.
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
  std::optional<tls_files> tls_;
  caf::timespan join_timeout_ = std::chrono::seconds(10);
  std::string name_ = "remote";
  log_hook log_;
};

/// How a node joins a remote pool. Chained setters; `validate()` names the
/// first bad field. Plain value.
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

  /// When the pool stops on purpose (its gatekeeper ends with
  /// `exit_reason::normal` or `user_shutdown`, e.g. after a drain), stop the
  /// workers and end the node normally instead of rejoining. A lost
  /// connection is still rejoined. Default off: a node waits for its pool
  /// to come back whatever the reason.
  node_options& leave_when_pool_stops(bool x) {
    leave_when_pool_stops_ = x;
    return *this;
  }

  bool leave_when_pool_stops() const noexcept {
    return leave_when_pool_stops_;
  }

  /// Connects through CAF's OpenSSL module (the system needs
  /// `configure_remote_tls`). Default: plain TCP.
  node_options& tls(bool x) {
    tls_ = x;
    return *this;
  }

  bool tls() const noexcept {
    return tls_;
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
  bool leave_when_pool_stops_ = false;
  bool tls_ = false;
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

/// As `configure_remote`, then loads CAF's OpenSSL module with `files`
/// (`cfg.openssl_certificate`, ...). Inline so that only programs using TLS
/// link `libcaf_openssl` (CMake: `CAF::openssl` from `FindCAF` with the
/// `openssl` component).
inline void configure_remote_tls(caf::actor_system_config& cfg,
                                 const tls_files& files) {
  configure_remote(cfg);
  cfg.openssl_certificate = files.certificate;
  cfg.openssl_key = files.key;
  cfg.openssl_cafile = files.cafile;
  cfg.openssl_passphrase = files.passphrase;
  cfg.load<caf::openssl::manager>();
}

/// Spawns a gatekeeper in front of `pool` (a shepherd): it admits
/// `node_join`s and `pool_ctl`s carrying `opts.token()` and drops
/// everything else (see docs/remote.md). It keeps the pool alive and stops
/// (unpublishing itself) when the pool terminates. Not published yet: use
/// `publish_gatekeeper`, or `publish_pool` for both steps. Does not block.
caf::expected<caf::actor> spawn_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& pool,
                                           remote_options opts);

/// Publishes `gatekeeper` on `opts.bind_address()` : `opts.port()` (TLS
/// with `opts.tls()`); returns the bound port. Blocks until the middleman
/// answered (at most 10 s); do not call from an actor.
caf::expected<uint16_t> publish_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& gatekeeper,
                                           const remote_options& opts);

namespace detail {

/// Inputs and result of a job `Job` (a callable type or a signature
/// `Out(In...)`) that `sys` cannot serialize, comma-separated; empty when
/// all can cross the network.
template <class Job>
std::string unsendable_types(caf::actor_system& sys) {
  using traits = job_traits<Job>;
  using raw = typename traits::result;
  using out = std::conditional_t<std::is_void_v<raw>, caf::unit_t, raw>;
  auto result = unserializable_types(sys, typename traits::args{});
  auto output = unserializable_types(sys, caf::detail::type_list<out>{});
  if (!output.empty())
    result += (result.empty() ? "" : ", ") + output;
  return result;
}

/// The error for `unsendable_types`, naming `field`.
caf::error unsendable_error(const char* field, const std::string& types);

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

} // namespace detail

/// Returns `pool.invalid_option` naming the types when the inputs or the
/// result of `Job` (a callable type or a signature `Out(In...)`) cannot
/// cross the network because `sys` cannot serialize them; none otherwise.
/// `publish_pool` and `join_remote_pool` check this themselves; call it
/// before `spawn_gatekeeper` + `publish_gatekeeper`. Safe from any thread.
template <class Job>
caf::error check_sendable(caf::actor_system& sys) {
  auto unknown = detail::unsendable_types<Job>(sys);
  if (!unknown.empty())
    return detail::unsendable_error("publish", unknown);
  return caf::none;
}

/// Publishes `pool` (a shepherd running jobs of type `Job`) behind a new
/// gatekeeper and returns the bound port. `Job` is the job's type
/// (`decltype(fn)`) or just its signature (`int64_t(int32_t)`): its inputs
/// and result cross the network, so each must be known to `sys` (an
/// `inspect` overload and a type ID registered with the config); otherwise
/// this refuses with `pool.invalid_option` naming the types. Also refuses
/// invalid options, and TLS when the system lacks the matching OpenSSL
/// configuration. Blocks while publishing (at most 10 s); do not call from
/// an actor.
template <class Job>
caf::expected<uint16_t> publish_pool(caf::actor_system& sys,
                                     const caf::actor& pool,
                                     remote_options opts) {
  if (auto err = check_sendable<Job>(sys))
    return err;
  auto gatekeeper = spawn_gatekeeper(sys, pool, opts);
  if (!gatekeeper)
    return std::move(gatekeeper.error());
  // On failure, dropping the only handle ends the gatekeeper.
  return publish_gatekeeper(sys, *gatekeeper, opts);
}

/// Joins the pool published at `host`:`port` with `n` local workers running
/// `fn` (`Out(In...)` or `caf::expected<Out>(In...)`, as for `spawn_pool`;
/// cooperative or dedicated per `opts.kind()`). Returns the node actor,
/// which keeps the workers alive: when the connection to the pool drops it
/// stops them, reconnects with backoff and joins again with fresh workers;
/// a worker that dies while joined is replaced. Leave with
/// `leave_remote_pool` before the actor system is destroyed.
///
/// Blocks until the first join is answered (at most `opts.join_timeout()`
/// for the connect plus the same for the join): returns the gatekeeper's
/// refusal (`pool_remote.refused`), the connection error, or
/// `pool.invalid_option` for bad arguments or inputs/results that `sys`
/// cannot serialize. A refused or failed join returns only once the
/// workers spawned for it have stopped, so `sys` may be destroyed right
/// after. Do not call from an actor.
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
      return sys.spawn<caf::detached>(worker_actor<F>, fn);
    return sys.spawn(worker_actor<F>, fn);
  };
  cfg.options = std::move(opts);
  return detail::start_node(sys, std::move(cfg));
}

/// Makes `node` (from `join_remote_pool`) leave its pool: its workers stop
/// (the shepherd sees them go; attempts they held are retried elsewhere),
/// and once they terminated the node stops. Blocks for at most about twice
/// `timeout`; do not call from an actor.
///
/// An exit sent to the node (any reason but `kill`) ends it the same way:
/// it stops its workers and ends once they stopped, then with that reason.
/// Either way the actor system may be destroyed as soon as the node is
/// gone. Not after `kill`: a dedicated worker still stopping then can keep
/// the actor system's destructor waiting forever (on CAF 0.17.6 its down
/// message may reach the network layer's broker after the broker stopped,
/// and that message keeps the worker alive).
caf::error leave_remote_pool(caf::actor_system& sys, const caf::actor& node,
                             caf::timespan timeout = std::chrono::seconds(10));

} // namespace pool
