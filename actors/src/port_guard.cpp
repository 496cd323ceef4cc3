#include "pool/port_guard.hpp"

#include <algorithm>
#include <set>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <caf/actor_cast.hpp>
#include <caf/actor_registry.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/basp/message_type.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <caf/io/network/scribe_impl.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <fmt/format.h>

#include "pool/errors.hpp"
#include "pool/gatekeeper.hpp"
#include "pool/remote_types.hpp"

namespace pool::detail {

namespace {

using caf::io::basp::message_type;
using remote_clock = std::chrono::steady_clock;

/// The largest payload of a handshake, a monitor or a down message, and of
/// any message before the peer presented the token: a node id, two node
/// ids and an error, a join or a control message all fit easily.
constexpr uint32_t small_payload = 64 * 1024;

} // namespace

/// One accepted connection: checks each BASP header (and the payloads that
/// name nodes) before CAF's broker reads them.
class guarded_scribe : public caf::io::network::scribe_impl {
  std::shared_ptr<port_guard> guard_;

public:
  guarded_scribe(caf::io::network::default_multiplexer& mx,
                 caf::io::network::native_socket fd,
                 std::shared_ptr<port_guard> guard)
      : caf::io::network::scribe_impl(mx, fd), guard_(std::move(guard)),
        opened_at(remote_clock::now()) {
    // nop
  }

  ~guarded_scribe() override {
    guard_->closed(this);
  }

  bool consume(caf::execution_unit* ctx, const void* buf,
               size_t num_bytes) override {
    if (!detached() && !check(ctx, static_cast<const char*>(buf), num_bytes)) {
      shut(ctx, port_guard::close_reason::protocol);
      return false;
    }
    return caf::io::network::scribe_impl::consume(ctx, buf, num_bytes);
  }

  /// Closes the connection: CAF's broker gets its `connection_closed_msg`
  /// and forgets the peer's routes and proxies.
  void shut(caf::execution_unit* ctx, port_guard::close_reason why) {
    if (shut_ || detached())
      return;
    shut_ = true;
    guard_->count_close(why);
    stream_.graceful_shutdown();
    io_failure(ctx, caf::io::network::operation::read);
  }

  const remote_clock::time_point opened_at;
  /// The node its handshake named (none before).
  caf::node_id peer;
  /// Presented the token (a join or a control message was accepted).
  bool authenticated = false;

protected:
  void detach_from(caf::io::abstract_broker* ptr) override {
    caf::io::network::scribe_impl::detach_from(ptr);
    guard_->closed(this);
  }

private:
  bool check(caf::execution_unit* ctx, const char* buf, size_t n) {
    using caf::io::basp::header_size;
    if (!awaiting_payload_) {
      if (n != header_size)
        return false; // CAF's broker reads headers exactly.
      caf::binary_deserializer source{ctx, buf, n};
      if (source(header_) || !caf::io::basp::valid(header_))
        return false;
      auto op = header_.operation;
      // Nothing before the handshake, which is the client's (a peer never
      // sends a server handshake to a published port).
      if (!peer && op != message_type::client_handshake)
        return false;
      auto most = authenticated ? guard_->limits().max_message_size
                                : std::min(small_payload,
                                           guard_->limits().max_message_size);
      switch (op) {
        case message_type::client_handshake:
        case message_type::monitor_message:
        case message_type::down_message:
          most = std::min(most, small_payload);
          break;
        case message_type::direct_message:
        case message_type::heartbeat:
          break;
        default:
          // Routed messages carry a source node the sender chooses (a
          // forged sender, even one of our own actors) or travel on to
          // another node through this process: a star of nodes around a
          // pool never needs them.
          return false;
      }
      if (header_.payload_len > most)
        return false;
      awaiting_payload_ = header_.payload_len > 0;
      return true;
    }
    awaiting_payload_ = false;
    if (n != header_.payload_len)
      return false;
    caf::binary_deserializer source{ctx, buf, n};
    switch (header_.operation) {
      case message_type::client_handshake: {
        caf::node_id claimed;
        if (source(claimed))
          return false;
        return guard_->claim(this, claimed);
      }
      case message_type::monitor_message:
      case message_type::down_message: {
        // Only about the peer's own actors, and only for this node:
        // otherwise a peer could kill the proxies of another node's actors
        // (a forged "actor died") or have CAF forward the message.
        caf::node_id source_node;
        caf::node_id dest_node;
        if (source(source_node, dest_node))
          return false;
        return source_node == peer && dest_node == guard_->self();
      }
      default:
        return true;
    }
  }

  caf::io::basp::header header_;
  bool awaiting_payload_ = false;
  bool shut_ = false;
};

namespace {

/// Accepts connections for the guard: one over `max_connections` is closed
/// at once, the others get a guarded scribe.
class guarded_doorman : public caf::io::network::doorman_impl {
public:
  guarded_doorman(caf::io::network::default_multiplexer& mx,
                  caf::io::network::native_socket fd,
                  std::shared_ptr<port_guard> guard)
      : caf::io::network::doorman_impl(mx, fd), guard_(std::move(guard)) {
    // nop
  }

  bool new_connection() override {
    if (detached())
      return false;
    auto& mx = acceptor_.backend();
    auto fd = acceptor_.accepted_socket();
    if (!guard_->admit()) {
      caf::io::network::close_socket(fd);
      return true;
    }
    fd = guard_->renumber(fd);
    caf::io::network::keepalive(fd, true);
    auto conn = caf::make_counted<guarded_scribe>(mx, fd, guard_);
    auto hdl = conn->hdl();
    guard_->opened(conn.get());
    parent()->add_scribe(conn);
    return doorman::new_connection(&mx, hdl);
  }

private:
  std::shared_ptr<port_guard> guard_;
};

/// Ticks the guard's deadlines and logs its refusals, at most one line per
/// 5 s. Ends with the gatekeeper.
caf::behavior warden(caf::event_based_actor* self,
                     std::shared_ptr<port_guard> guard, caf::actor_addr whom,
                     log_hook log, std::string log_name) {
  auto& limits = guard->limits();
  auto tick =
      std::clamp(std::min(limits.handshake_timeout, limits.token_timeout) / 4,
                 caf::timespan{std::chrono::milliseconds(50)},
                 caf::timespan{std::chrono::seconds(1)});
  struct tally {
    gatekeeper_stats logged;
    remote_clock::time_point at{};
  };
  auto seen = std::make_shared<tally>();
  self->set_down_handler([self, whom](caf::down_msg& msg) {
    if (msg.source == whom)
      self->quit();
  });
  if (auto strong = caf::actor_cast<caf::actor>(whom))
    self->monitor(strong);
  else
    self->quit();
  self->delayed_send(self, tick, remote_tick_atom_v);
  return {
      [=](remote_tick_atom) {
        guard->expire(self->system());
        self->delayed_send(self, tick, remote_tick_atom_v);
        auto now = remote_clock::now();
        if (!log || now - seen->at < std::chrono::seconds(5))
          return;
        gatekeeper_stats x;
        guard->add_counters(x);
        auto& was = seen->logged;
        auto refused = x.connections_refused - was.connections_refused;
        auto no_hs = x.closed_no_handshake - was.closed_no_handshake;
        auto no_token = x.closed_no_token - was.closed_no_token;
        auto broke = x.closed_protocol - was.closed_protocol;
        if (refused + no_hs + no_token + broke == 0)
          return;
        log(log_level::warning, log_name,
            fmt::format("port guard: refused {} connections over "
                        "max_connections, closed {} without a handshake in "
                        "time, {} without the token in time, {} that broke "
                        "the protocol ({} open)",
                        refused, no_hs, no_token, broke, x.connections));
        was = x;
        seen->at = now;
      },
  };
}

} // namespace

port_guard::port_guard(guard_limits limits, caf::node_id self)
    : limits_(limits), self_(std::move(self)) {
  // nop
}

port_guard::~port_guard() {
  // nop
}

void port_guard::add_counters(gatekeeper_stats& x) const {
  x.connections = open_count_.load();
  x.connections_accepted = accepted_.load();
  x.connections_refused = refused_.load();
  x.closed_no_handshake = closed_no_handshake_.load();
  x.closed_no_token = closed_no_token_.load();
  x.closed_protocol = closed_protocol_.load();
}

void port_guard::authenticated(caf::actor_system& sys,
                               const caf::node_id& peer) {
  sys.middleman().backend().dispatch([self = shared_from_this(), peer] {
    auto i = self->by_node_.find(peer);
    if (i != self->by_node_.end())
      i->second->authenticated = true;
  });
}

void port_guard::expire(caf::actor_system& sys) {
  auto& mx = sys.middleman().backend();
  mx.dispatch([self = shared_from_this(), &mx] { self->expire_now(&mx); });
}

void port_guard::expire_now(caf::execution_unit* ctx) {
  auto now = remote_clock::now();
  std::vector<std::pair<guarded_scribe*, close_reason>> late;
  for (auto& kvp : open_) {
    auto conn = kvp.first;
    auto age = now - conn->opened_at;
    if (!conn->peer && age > limits_.handshake_timeout)
      late.emplace_back(conn, close_reason::no_handshake);
    else if (!conn->authenticated && age > limits_.token_timeout)
      late.emplace_back(conn, close_reason::no_token);
  }
  for (auto& [conn, why] : late)
    conn->shut(ctx, why);
}

int port_guard::renumber(int fd) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return fd;
  auto top = static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 4096));
  if (top < 256)
    return fd;
  auto low = top / 2;
  auto want = low + static_cast<int>(next_number_++ % (top - low));
  auto moved = ::fcntl(fd, F_DUPFD_CLOEXEC, want);
  if (moved < 0 || moved >= top) {
    if (moved >= 0)
      ::close(moved);
    return fd;
  }
  ::close(fd);
  return moved;
}

bool port_guard::admit() {
  if (open_.size() < limits_.max_connections)
    return true;
  ++refused_;
  return false;
}

void port_guard::opened(guarded_scribe* conn) {
  open_.emplace(conn, 0);
  ++accepted_;
  open_count_ = open_.size();
}

void port_guard::closed(guarded_scribe* conn) {
  if (open_.erase(conn) == 0)
    return;
  if (conn->peer) {
    auto i = by_node_.find(conn->peer);
    if (i != by_node_.end() && i->second == conn)
      by_node_.erase(i);
  }
  open_count_ = open_.size();
}

bool port_guard::claim(guarded_scribe* conn, const caf::node_id& peer) {
  if (!peer || peer == self_)
    return false;
  if (conn->peer)
    return conn->peer == peer; // CAF repeats the handshake (same node)
  if (!by_node_.emplace(peer, conn).second)
    return false; // Another open connection is that node: a takeover.
  conn->peer = peer;
  return true;
}

void port_guard::count_close(close_reason why) {
  switch (why) {
    case close_reason::no_handshake:
      ++closed_no_handshake_;
      break;
    case close_reason::no_token:
      ++closed_no_token_;
      break;
    case close_reason::protocol:
      ++closed_protocol_;
      break;
  }
}

caf::expected<uint16_t>
publish_guarded(caf::actor_system& sys, const caf::actor& whom,
                std::shared_ptr<port_guard> guard, uint16_t port,
                const std::string& address, bool reuse_address, log_hook log,
                std::string log_name) {
  auto mx = dynamic_cast<caf::io::network::default_multiplexer*>(
      &sys.middleman().backend());
  if (mx == nullptr)
    return caf::make_error(pool_errc::invalid_option, std::string{"middleman"},
                           std::string{"publishing a pool needs CAF's default "
                                       "network backend"});
  auto fd = caf::io::network::new_tcp_acceptor_impl(
      port, address.empty() ? nullptr : address.c_str(), reuse_address);
  if (!fd)
    return std::move(fd.error());
  auto door = caf::make_counted<guarded_doorman>(*mx, *fd, guard);
  auto bound = door->port();
  auto basp =
      sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::anon_send(basp, caf::publish_atom_v, caf::io::doorman_ptr{door}, bound,
                 caf::actor_cast<caf::strong_actor_ptr>(whom),
                 std::set<std::string>{});
  if (!guard->warden_started.exchange(true))
    sys.spawn(warden, guard, whom.address(), std::move(log),
              std::move(log_name));
  return bound;
}

void forget_named_actors(caf::actor_system& sys) {
  auto& registry = sys.registry();
  for (auto name : {caf::atom("SpawnServ"), caf::atom("ConfigServ")}) {
    if (auto ptr = registry.get(name))
      registry.erase(ptr->id());
    registry.erase(name);
  }
  for (auto& ptr : {sys.spawn_serv(), sys.config_serv()})
    if (ptr)
      registry.erase(ptr->id());
}

} // namespace pool::detail

namespace pool {

// (Here rather than in gatekeeper.cpp: it only asks the gatekeeper for its
// guard and publishes behind it.)
caf::expected<uint16_t> publish_gatekeeper(caf::actor_system& sys,
                                           const caf::actor& gatekeeper,
                                           const remote_options& opts) {
  if (auto err = opts.validate())
    return err;
  if (!gatekeeper)
    return caf::make_error(pool_errc::invalid_option, std::string{"gatekeeper"},
                           std::string{"must be a valid actor"});
  if (!sys.has_middleman())
    return caf::make_error(pool_errc::invalid_option, std::string{"middleman"},
                           std::string{"the actor system has no network "
                                       "module: configure it with "
                                       "pool::configure_remote"});
  detail::forget_named_actors(sys);
  std::shared_ptr<detail::port_guard> guard;
  caf::error failure;
  caf::scoped_actor self{sys};
  self->request(gatekeeper, std::chrono::seconds(10), remote_guard_atom_v)
      .receive([&](std::shared_ptr<detail::port_guard>& x) { guard = x; },
               [&](caf::error& err) { failure = std::move(err); });
  // Another actor (a shepherd, say) does not understand the question.
  if (!guard && (!failure || failure == pool_errc::unexpected_message ||
                 failure == caf::sec::unexpected_message))
    return caf::make_error(pool_errc::invalid_option, std::string{"gatekeeper"},
                           std::string{"is not a pool's gatekeeper: pass what "
                                       "spawn_gatekeeper returned"});
  if (!guard)
    return failure;
  return detail::publish_guarded(sys, gatekeeper, std::move(guard), opts.port(),
                                 opts.bind_address(), opts.reuse_address(),
                                 opts.log(), opts.name());
}

} // namespace pool
