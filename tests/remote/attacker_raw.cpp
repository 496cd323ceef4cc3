// The stranger's attacks in hand-crafted BASP over plain sockets (see
// tests/remote/attacker.cpp): `probe`, one connection per attack and then
// a scan of every id, and `flood`.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/basp_broker.hpp>
#include <pool/all.hpp>
#include <pool/remote.hpp>
#include <pool/remote_session.hpp>

#include "attacker.hpp"

using namespace std::chrono_literals;
using caf::io::basp::header;
using caf::io::basp::message_type;

using attacker::fresh_node;

namespace {

// -- hand-crafted BASP over a plain socket ------------------------------------

class raw_peer {
public:
  raw_peer(caf::actor_system& sys, const std::string& host, uint16_t port)
      : sys_(sys) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
      closed_ = true;
  }

  ~raw_peer() {
    ::close(fd_);
  }

  raw_peer(const raw_peer&) = delete;
  raw_peer& operator=(const raw_peer&) = delete;

  bool closed() const {
    return closed_;
  }

  void send_bytes(const std::vector<char>& buf) {
    size_t done = 0;
    while (done < buf.size() && !closed_) {
      auto n = ::send(fd_, buf.data() + done, buf.size() - done, MSG_NOSIGNAL);
      if (n <= 0)
        closed_ = true;
      else
        done += static_cast<size_t>(n);
    }
  }

  /// Sends one BASP message; `payload` is written after the header.
  template <class... Ts>
  void send(header hdr, Ts&&... payload) {
    std::vector<char> body;
    if constexpr (sizeof...(Ts) > 0) {
      caf::binary_serializer sink{sys_, body};
      if (sink(payload...))
        std::cerr << "cannot serialize a payload\n";
    }
    hdr.payload_len = static_cast<uint32_t>(body.size());
    send_header_only(hdr);
    send_bytes(body);
  }

  void send_header_only(header hdr) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys_, buf};
    if (sink(hdr))
      std::cerr << "cannot serialize a header\n";
    send_bytes(buf);
  }

  /// Reads one BASP message within `timeout`: false on EOF or timeout.
  bool receive(header& hdr, std::vector<char>& payload,
               std::chrono::milliseconds timeout) {
    std::vector<char> buf(caf::io::basp::header_size);
    if (!read_exact(buf, timeout))
      return false;
    caf::binary_deserializer source{sys_, buf};
    if (source(hdr))
      return false;
    payload.resize(hdr.payload_len);
    return hdr.payload_len == 0 || read_exact(payload, timeout);
  }

  /// Reads the server handshake: the pool's node and published actor.
  bool handshake(const caf::node_id& as, caf::node_id& server,
                 caf::actor_id& published, uint8_t flags = 0) {
    header hdr;
    std::vector<char> payload;
    if (!receive(hdr, payload, 5000ms) ||
        hdr.operation != message_type::server_handshake)
      return false;
    caf::binary_deserializer source{sys_, payload};
    std::vector<std::string> app_ids;
    std::set<std::string> sigs;
    if (source(server, app_ids, published, sigs))
      return false;
    send(header{message_type::client_handshake, flags, 0, 0, 0, 0}, as);
    return !closed_;
  }

  /// Waits at most `timeout` for the server to close the connection,
  /// discarding what it sends.
  bool closed_by_server(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    char buf[4096];
    while (!closed_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        continue;
      if (::recv(fd_, buf, sizeof(buf), 0) <= 0)
        closed_ = true;
    }
    return true;
  }

private:
  bool read_exact(std::vector<char>& buf, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    size_t got = 0;
    while (got < buf.size()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 ||
          ::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        return false;
      auto n = ::recv(fd_, buf.data() + got, buf.size() - got, 0);
      if (n <= 0) {
        closed_ = true;
        return false;
      }
      got += static_cast<size_t>(n);
    }
    return true;
  }

  caf::actor_system& sys_;
  int fd_ = -1;
  bool closed_ = false;
};

constexpr uint64_t async_id = 0x1000000000000000;

/// A request id CAF takes as a request: normal category, nonzero low bits.
uint64_t request_id(uint64_t n) {
  return async_id | n;
}

std::vector<caf::strong_actor_ptr> no_stages() {
  return {};
}

void report(const char* scenario, bool closed) {
  std::cout << "raw " << scenario << ' ' << (closed ? "closed" : "OPEN")
            << std::endl;
}

/// Protocol attacks, one connection each, and a scan of every id.
} // namespace

namespace attacker {

int run_probe(caf::actor_system& sys, const std::string& host, uint16_t port,
              caf::actor_id max_id, const caf::node_id& legit) {
  caf::node_id pool_node;
  caf::actor_id gk = 0;
  auto fast = 2000ms;
  { // A message before the handshake (CAF would deliver it).
    raw_peer peer{sys, host, port};
    header hdr;
    std::vector<char> payload;
    peer.receive(hdr, payload, fast); // the server's handshake
    peer.send(header{message_type::direct_message, 0, 0, request_id(1), 1, 1},
              no_stages(), caf::make_message(pool::drain_atom_v));
    report("before-handshake", peer.closed_by_server(fast));
  }
  { // One header announcing 4 GiB: CAF would allocate and zero it.
    raw_peer peer{sys, host, port};
    peer.handshake(fresh_node(), pool_node, gk);
    peer.send_header_only(
        header{message_type::direct_message, 0, 0xFFFFFFF0u, async_id, 1, gk});
    report("4gib-header", peer.closed_by_server(fast));
  }
  { // A routed message that claims to come from the gatekeeper itself.
    raw_peer peer{sys, host, port};
    peer.handshake(fresh_node(), pool_node, gk);
    peer.send(header{message_type::routed_message, 0, 0, async_id, gk, gk},
              pool_node, pool_node, no_stages(),
              caf::make_message(pool::drain_atom_v));
    report("routed-forged-sender", peer.closed_by_server(fast));
  }
  { // "The legitimate node's actors died" (CAF would kill their proxies).
    raw_peer peer{sys, host, port};
    peer.handshake(fresh_node(), pool_node, gk);
    for (caf::actor_id id = 1; id <= 50; ++id)
      peer.send(header{message_type::down_message, 0, 0, 0, id, 0}, legit,
                pool_node, caf::error{caf::exit_reason::kill});
    report("forged-down", peer.closed_by_server(fast));
  }
  { // Claiming the legitimate node's identity (CAF would route its
    // traffic here).
    raw_peer peer{sys, host, port};
    peer.handshake(legit, pool_node, gk, header::select_connection_flag);
    report("route-takeover", peer.closed_by_server(fast));
  }
  { // Claiming the pool's own identity.
    raw_peer peer{sys, host, port};
    header hdr;
    std::vector<char> payload;
    peer.receive(hdr, payload, fast);
    peer.send(header{message_type::client_handshake, 0, 0, 0, 0, 0}, pool_node);
    report("self-claim", peer.closed_by_server(fast));
  }
  { // Every id, every command, as a handshaken stranger.
    raw_peer peer{sys, host, port};
    auto shook = peer.handshake(fresh_node(), pool_node, gk);
    uint64_t n = 0;
    std::vector<caf::message> commands{
        caf::make_message(pool::pool_stats_atom_v),
        caf::make_message(pool::resize_atom_v, uint64_t{100}),
        caf::make_message(pool::cancel_op_atom_v, uint64_t{1}),
        caf::make_message(pool::submit_atom_v, int32_t{7}),
        caf::make_message(pool::drain_atom_v),
    };
    for (caf::actor_id id = 1; id <= max_id; ++id) {
      for (auto& cmd : commands)
        peer.send(
            header{message_type::direct_message, 0, 0, request_id(++n), 1, id},
            no_stages(), cmd);
      peer.send(header{message_type::direct_message, 0, 0, async_id, 1, id},
                no_stages(),
                caf::make_message(caf::exit_msg{{}, caf::exit_reason::kill}));
    }
    uint64_t errors = 0;
    uint64_t answers = 0;
    header hdr;
    std::vector<char> payload;
    while (errors + answers < n && peer.receive(hdr, payload, fast)) {
      if (hdr.operation != message_type::direct_message ||
          !caf::message_id{hdr.operation_data}.is_response())
        continue;
      caf::binary_deserializer source{sys, payload};
      std::vector<caf::strong_actor_ptr> stages;
      caf::message msg;
      if (!source(stages, msg) && msg.match_elements<caf::error>()) {
        ++errors;
      } else {
        ++answers;
        std::cout << "raw ANSWER from " << hdr.source_actor << ": "
                  << caf::to_string(msg) << std::endl;
      }
    }
    std::cout << "raw scan requests " << n << " errors " << errors
              << " answers " << answers << " handshake "
              << (shook ? "ok" : "FAILED") << " then "
              << (peer.closed() ? "closed" : "open") << std::endl;
  }
  return 0;
}

/// Garbage, a silent handshaken peer, and a flood of idle connections.
int run_flood(caf::actor_system& sys, const std::string& host, uint16_t port,
              int connections) {
  caf::node_id pool_node;
  caf::actor_id gk = 0;
  { // Random bytes instead of a handshake.
    raw_peer peer{sys, host, port};
    std::mt19937 rng{7};
    std::vector<char> junk(4096);
    for (auto& x : junk)
      x = static_cast<char>(rng());
    peer.send_bytes(junk);
    report("garbage", peer.closed_by_server(2000ms));
  }
  { // Handshaken, then silent: closed at the token deadline.
    raw_peer peer{sys, host, port};
    peer.handshake(fresh_node(), pool_node, gk);
    report("no-token", peer.closed_by_server(10000ms));
  }
  { // Connections that never say a word: those over max_connections are
    // closed at once, the others at the handshake deadline.
    std::vector<std::unique_ptr<raw_peer>> idle;
    for (int i = 0; i < connections; ++i)
      idle.push_back(std::make_unique<raw_peer>(sys, host, port));
    int closed = 0;
    for (auto& peer : idle)
      closed += peer->closed_by_server(10000ms) ? 1 : 0;
    std::cout << "raw idle opened " << idle.size() << " closed " << closed
              << std::endl;
  }
  return 0;
}

} // namespace attacker
