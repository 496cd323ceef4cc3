#pragma once

// An opt-in HTTP endpoint for operators (target pool::http): Prometheus
// metrics, the stats as JSON, a live page, and token-guarded actions, for
// one or several pools. docs/monitoring.md describes every route.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/timespan.hpp>

#include "pool/log.hpp"

namespace pool {

/// One pool to serve, under a name used in URLs and in the `pool` label
/// (letters, digits, `_`, `-`, `.`; at most 64 characters).
struct http_pool {
  std::string name;
  caf::actor pool;
};

struct http_options {
  /// Address to listen on. Loopback unless told otherwise: the page and the
  /// metrics show operation ids and error texts.
  std::string host = "127.0.0.1";
  /// 0: any free port (read it back with `http_endpoint::port`).
  uint16_t port = 0;
  /// Operator token for the actions (resize, drain, cancel), sent as
  /// `Authorization: Bearer <token>`; at least 16 characters. Empty: the
  /// actions are disabled and answer 403.
  std::string token;
  /// How often each pool is asked for its figures. Every client is served
  /// from the last answer, so clients never add load to the pools.
  caf::timespan sample_interval = std::chrono::seconds(1);
  /// Samples kept per pool (sparklines span `history * sample_interval`).
  size_t history = 300;
  /// The window of the headline throughput and p50/p95/p99.
  caf::timespan window = std::chrono::seconds(60);
  /// Largest request body accepted (larger: 413).
  size_t max_body = 4096;
  /// Threads serving requests. They only serve requests that arrived
  /// whole: one gate thread reads every connection until then.
  size_t threads = 4;
  /// Host names that requests may address, besides `localhost` and IP
  /// addresses with the endpoint's port: `NAME` (any port, e.g. behind a
  /// proxy) or `NAME:PORT`. A request with another `Host` header gets 421,
  /// so that a web page whose DNS name was rebound to this host's address
  /// cannot read the endpoint from a browser. Case-insensitive.
  std::vector<std::string> allowed_hosts;
  /// A request (header and body) must arrive within this, counted from the
  /// connection's start or, on a kept-alive connection, from its first
  /// byte; else 408 and the connection closes. A client that trickles
  /// bytes holds no request thread meanwhile.
  caf::timespan request_timeout = std::chrono::seconds(5);
  /// How long a kept-alive connection may wait for its next request.
  caf::timespan keep_alive_timeout = std::chrono::seconds(5);
  /// How long a client may take to receive a response.
  caf::timespan write_timeout = std::chrono::seconds(5);
  /// Connections waiting for their next request, at most; beyond, the one
  /// waiting longest is closed.
  size_t max_connections = 1024;
  /// How long an action waits for the pool's answer (longer: 504, and the
  /// action goes on).
  caf::timespan action_timeout = std::chrono::seconds(10);
  /// Where the action log lines go (who did what, and the outcome).
  log_hook log = default_log_hook();
};

/// A running endpoint; stops (and joins its threads) when destroyed.
class http_endpoint {
public:
  struct impl;

  explicit http_endpoint(std::unique_ptr<impl> ptr);
  ~http_endpoint();
  http_endpoint(const http_endpoint&) = delete;
  http_endpoint& operator=(const http_endpoint&) = delete;

  /// The port it listens on.
  uint16_t port() const noexcept;

  /// `http://host:port`.
  std::string url() const;

  /// Stops serving; idempotent.
  void stop();

private:
  std::unique_ptr<impl> impl_;
};

/// Validates `opts`, binds, and serves the pools until the endpoint is
/// destroyed. Errors (a bad option, a taken port) say what was wrong.
caf::expected<std::unique_ptr<http_endpoint>>
serve_http(caf::actor_system& sys, std::vector<http_pool> pools,
           http_options opts = {});

/// Parses `ADDR:PORT` (or `:PORT`, or `PORT`, meaning 127.0.0.1) into
/// `opts.host` and `opts.port`, as the programs' `--http` takes it.
caf::error parse_http_address(const std::string& text, http_options& opts);

} // namespace pool
