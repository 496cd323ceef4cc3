// The HTTP endpoint against hostile clients, with real sockets on
// 127.0.0.1: the Host check that keeps DNS rebinding out, and the gate that
// keeps slow clients from stalling scrapes. Every wait is bounded.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include "pool/http.hpp"
#include "real_system.hpp"

using namespace std::chrono_literals;
using pool::test::real_config;

namespace {

/// A pool behind an endpoint with `opts` (sampled every 20 ms).
struct served {
  real_config cfg;
  caf::actor_system sys{cfg};
  caf::actor pool;
  std::unique_ptr<pool::http_endpoint> endpoint;

  explicit served(pool::http_options opts = {}) {
    auto p = pool::spawn_pool(
        sys, [](int x) { return x; },
        pool::pool_options{}.workers(1).log(pool::silent_log_hook()));
    REQUIRE(p);
    pool = *p;
    opts.sample_interval = 20ms;
    opts.log = pool::silent_log_hook();
    auto ep = pool::serve_http(sys, {{"main", pool}}, opts);
    REQUIRE_MESSAGE(ep, pool::describe(ep.error()));
    endpoint = std::move(*ep);
  }

  ~served() {
    endpoint.reset();
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  }

  uint16_t port() const {
    return endpoint->port();
  }

  /// GET `path` with `Host: host` (httplib's own when empty).
  httplib::Result get(const std::string& path, const std::string& host = "") {
    httplib::Client cli{"127.0.0.1", port()};
    cli.set_connection_timeout(5, 0);
    cli.set_read_timeout(5, 0);
    httplib::Headers headers;
    if (!host.empty())
      headers.emplace("Host", host);
    return cli.Get(path.c_str(), headers);
  }
};

/// A TCP connection to 127.0.0.1:`port`; closed at scope exit.
struct raw_socket {
  int fd = -1;

  explicit raw_socket(uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) ==
            0);
  }

  raw_socket(raw_socket&& other) noexcept : fd(other.fd) {
    other.fd = -1;
  }

  raw_socket(const raw_socket&) = delete;
  raw_socket& operator=(const raw_socket&) = delete;

  ~raw_socket() {
    if (fd >= 0)
      ::close(fd);
  }

  bool send_text(const std::string& text) {
    return ::send(fd, text.data(), text.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(text.size());
  }

  /// Everything until the server closes, waiting at most `timeout`.
  std::string read_all(std::chrono::milliseconds timeout) {
    std::string result;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    char buf[4096];
    while (wait_readable(deadline)) {
      auto n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0)
        break;
      result.append(buf, static_cast<size_t>(n));
    }
    return result;
  }

  /// Whether the server closed the connection (EOF or reset) by `deadline`.
  bool closed_by(std::chrono::steady_clock::time_point deadline) {
    char buf[512];
    while (wait_readable(deadline)) {
      auto n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        return true;
    }
    return false;
  }

private:
  bool wait_readable(std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return false;
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) > 0;
  }
};

int status_of(const httplib::Result& res) {
  REQUIRE(res);
  return res->status;
}

} // namespace

TEST_CASE("the Host check answers the endpoint's address, localhost, IP "
          "addresses and allowed names, and 421 to any other name" *
          doctest::timeout(60)) {
  pool::http_options opts;
  opts.allowed_hosts = {"pool.example", "Metrics.Internal:9999"};
  served s{opts};
  auto port = std::to_string(s.port());
  CHECK_EQ(status_of(s.get("/metrics")), 200);
  for (auto host :
       {"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port,
        "[::1]:" + port, "10.1.2.3:" + port, std::string{"pool.example"},
        "pool.example:" + port, std::string{"metrics.internal:9999"}}) {
    INFO(host);
    CHECK_EQ(status_of(s.get("/api/stats", host)), 200);
  }
  // A rebound name, the right names on another port, and garbage.
  for (auto host :
       {"evil.example:" + port, std::string{"evil.example"},
        "localhost.evil.example:" + port, std::string{"127.0.0.1:1"},
        std::string{"localhost"}, std::string{"metrics.internal:9998"},
        std::string{"[::1:" + port}, "a b:" + port}) {
    INFO(host);
    for (auto path : {"/api/stats", "/metrics", "/"}) {
      auto res = s.get(path, host);
      CHECK_EQ(status_of(res), 421);
      CHECK_NE(res->body.find("does not answer to host"), std::string::npos);
      CHECK_EQ(res->get_header_value("Connection"), "close");
    }
  }
  // Actions too, before any token or body is looked at.
  httplib::Client cli{"127.0.0.1", s.port()};
  auto action = cli.Post("/api/pools/main/pause",
                         {{"Host", "evil.example:" + port},
                          {"Authorization", "Bearer whatever-it-is-123"}},
                         "{}", "application/json");
  CHECK_EQ(status_of(action), 421);
  // No Host header at all (HTTP/1.0).
  raw_socket bare{s.port()};
  REQUIRE(bare.send_text("GET /api/stats HTTP/1.0\r\n\r\n"));
  auto answer = bare.read_all(5s);
  CHECK_EQ(answer.rfind("HTTP/1.1 421", 0), 0u);
}

TEST_CASE("allowed hosts and the gate's limits are validated, naming the "
          "field" *
          doctest::timeout(30)) {
  real_config cfg;
  caf::actor_system sys{cfg};
  auto p = pool::spawn_pool(
      sys, [](int x) { return x; }, pool::pool_options{}.workers(1));
  REQUIRE(p);
  auto refused = [&](pool::http_options o, const std::string& part) {
    auto ep = pool::serve_http(sys, {{"a", *p}}, std::move(o));
    REQUIRE_FALSE(ep);
    auto text = pool::describe(ep.error());
    INFO(text);
    CHECK_NE(text.find(part), std::string::npos);
  };
  pool::http_options o;
  o.allowed_hosts = {"bad host"};
  refused(o, "allowed host 'bad host' is not a host name");
  o.allowed_hosts = {""};
  refused(o, "allowed host '' is not a host name");
  o.allowed_hosts = {"name:0"};
  refused(o, "allowed host 'name:0'");
  o = {};
  o.request_timeout = caf::timespan{0};
  refused(o, "request_timeout must lie between 1ms and 1h");
  o = {};
  o.keep_alive_timeout = std::chrono::hours(2);
  refused(o, "keep_alive_timeout must lie between 1ms and 1h");
  o = {};
  o.write_timeout = caf::timespan{-1};
  refused(o, "write_timeout must lie between 1ms and 1h");
  o = {};
  o.max_connections = 0;
  refused(o, "max_connections must be at least 1");
  caf::anon_send_exit(*p, caf::exit_reason::user_shutdown);
}

TEST_CASE("64 slow clients (a header byte every 2 s) neither stall /metrics "
          "nor stay past the request timeout" *
          doctest::timeout(90)) {
  pool::http_options opts;
  opts.request_timeout = 3s;
  served s{opts};
  constexpr size_t slow_count = 64;
  std::vector<raw_socket> slow;
  auto connecting = std::chrono::steady_clock::now();
  for (size_t i = 0; i < slow_count; ++i)
    slow.emplace_back(s.port());
  auto started = std::chrono::steady_clock::now();
  // The kernel completes them all at once (the backlog holds the burst; a
  // dropped handshake would cost a client a 1 s SYN retransmit).
  CHECK(started - connecting < 1s);
  // One header byte from each every 2 s, from another thread, until the
  // end of the test (also when a check fails).
  struct trickler {
    std::atomic<bool> done{false};
    std::thread thread;
    ~trickler() {
      done = true;
      if (thread.joinable())
        thread.join();
    }
  } trickle;
  trickle.thread = std::thread{[&slow, &done = trickle.done] {
    const std::string header = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (size_t i = 0; !done; ++i) {
      for (auto& c : slow)
        c.send_text(std::string(1, header[i % header.size()]));
      for (int t = 0; t < 200 && !done; ++t)
        std::this_thread::sleep_for(10ms); // the pace of the attack
    }
  }};
  // While they hold their connections: scrape 20 times.
  std::this_thread::sleep_for(300ms); // every slow client sent its first byte
  std::vector<double> latencies;
  for (int i = 0; i < 20; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto res = s.get("/metrics");
    auto t1 = std::chrono::steady_clock::now();
    CHECK_EQ(status_of(res), 200);
    latencies.push_back(
        std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  auto scraped = std::chrono::steady_clock::now();
  std::sort(latencies.begin(), latencies.end());
  MESSAGE("/metrics with " << slow_count << " slow clients: median "
                           << latencies[latencies.size() / 2] << " ms, max "
                           << latencies.back() << " ms (target: 100 ms)");
  CHECK(latencies.back() < 5000.0);
  // The slow clients were still connected while we scraped...
  CHECK(scraped - started < opts.request_timeout);
  // ... and each is closed once its request is not complete in time.
  size_t closed = 0;
  auto deadline = started + opts.request_timeout + 5s;
  for (auto& c : slow)
    closed += c.closed_by(deadline) ? 1 : 0;
  auto all_closed = std::chrono::steady_clock::now();
  CHECK_EQ(closed, slow_count);
  CHECK(all_closed - started >= opts.request_timeout - 100ms);
}

TEST_CASE("kept-alive and pipelined requests are all answered" *
          doctest::timeout(30)) {
  served s;
  httplib::Client cli{"127.0.0.1", s.port()};
  cli.set_keep_alive(true);
  cli.set_read_timeout(5, 0);
  for (int i = 0; i < 5; ++i)
    CHECK_EQ(status_of(cli.Get("/metrics")), 200);
  // Two requests in one segment: two responses, then the close.
  raw_socket c{s.port()};
  auto host = "Host: 127.0.0.1:" + std::to_string(s.port()) + "\r\n";
  REQUIRE(c.send_text("GET /metrics HTTP/1.1\r\n" + host +
                      "\r\nGET /nope HTTP/1.1\r\n" + host +
                      "Connection: close\r\n\r\n"));
  auto text = c.read_all(5s);
  CHECK_EQ(text.rfind("HTTP/1.1 200", 0), 0u);
  CHECK_NE(text.find("HTTP/1.1 404"), std::string::npos);
}

TEST_CASE("a client asking for 100 Continue gets it once, from the gate, "
          "and then its answer" *
          doctest::timeout(30)) {
  served s;
  raw_socket c{s.port()};
  auto body = std::string{"{\"workers\": 2}"};
  REQUIRE(c.send_text("POST /api/pools/main/resize HTTP/1.1\r\nHost: "
                      "127.0.0.1:" +
                      std::to_string(s.port()) +
                      "\r\nExpect: 100-continue\r\nContent-Length: " +
                      std::to_string(body.size()) +
                      "\r\nConnection: close\r\n\r\n"));
  timeval bound{5, 0}; // the wait for the interim answer
  REQUIRE(::setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound)) ==
          0);
  std::string interim(25, '\0');
  REQUIRE(::recv(c.fd, interim.data(), interim.size(), MSG_WAITALL) == 25);
  CHECK_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
  REQUIRE(c.send_text(body));
  auto answer = c.read_all(5s);
  CHECK_EQ(answer.rfind("HTTP/1.1 403", 0), 0u); // no operator token
  CHECK_EQ(answer.find("100 Continue"), std::string::npos);
}

TEST_CASE("a body larger than the gate reads, a chunked one, or a header "
          "over 16 KiB is refused at the gate" *
          doctest::timeout(30)) {
  served s;
  auto host = "Host: 127.0.0.1:" + std::to_string(s.port()) + "\r\n";
  raw_socket big{s.port()};
  REQUIRE(big.send_text("POST /api/pools/main/resize HTTP/1.1\r\n" + host +
                        "Content-Length: 10000000\r\n\r\n"));
  CHECK_EQ(big.read_all(5s).rfind("HTTP/1.1 413", 0), 0u);
  raw_socket chunked{s.port()};
  REQUIRE(chunked.send_text("POST /api/pools/main/resize HTTP/1.1\r\n" + host +
                            "Transfer-Encoding: chunked\r\n\r\n"));
  CHECK_EQ(chunked.read_all(5s).rfind("HTTP/1.1 411", 0), 0u);
  // A header over 16 KiB, whole or not.
  for (auto end : {"\r\n\r\n", ""}) {
    raw_socket fat{s.port()};
    REQUIRE(fat.send_text("GET /metrics HTTP/1.1\r\n" + host +
                          "X-Pad: " + std::string(20000, 'p') + end));
    CHECK_EQ(fat.read_all(5s).rfind("HTTP/1.1 431", 0), 0u);
  }
}

TEST_CASE("serve_http: a null pool handle or no pool at all is refused, and "
          "default options serve" *
          doctest::timeout(30)) {
  real_config cfg;
  caf::actor_system sys{cfg};
  auto null_pool = pool::serve_http(sys, {{"a", caf::actor{}}});
  REQUIRE_FALSE(null_pool);
  CHECK_NE(pool::describe(null_pool.error())
               .find("pool 'a' is an invalid "
                     "handle"),
           std::string::npos);
  auto none = pool::serve_http(sys, {});
  REQUIRE_FALSE(none);
  CHECK_NE(pool::describe(none.error()).find("no pool to serve"),
           std::string::npos);
  served defaults;
  CHECK_EQ(status_of(defaults.get("/metrics")), 200);
}
