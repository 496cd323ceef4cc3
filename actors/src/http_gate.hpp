#pragma once

// The HTTP endpoint's server: cpp-httplib's routing and responses, but no
// request thread ever waits for a client. cpp-httplib (0.11.4) serves a
// connection on one of its threads from accept to close, and its read
// timeout restarts at every byte: one client sending a header byte every
// 2 s holds a thread for good, and `threads` such clients stop every
// scrape. Here one gate thread reads every connection's request, with
// poll, until the whole header (and a body up to `max_body`) is in; only
// then does a request thread serve it, from memory. A request that is not
// complete within `request_timeout` (from the connection's start, or from
// its first byte after a kept-alive response), or a connection idle past
// `keep_alive_timeout`, is closed; so is the oldest waiting connection
// when `max_waiting` are waiting. Responses must be taken within
// `write_timeout`.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace pool::http_detail {

/// The gate's limits. Plain value.
struct gate_limits {
  std::chrono::milliseconds request_timeout{5000};
  std::chrono::milliseconds keep_alive_timeout{5000};
  std::chrono::milliseconds write_timeout{5000};
  size_t max_waiting = 1024;
  size_t max_body = 4096;
  size_t threads = 4;
  /// Requests served on one connection before it is closed.
  size_t keep_alive_requests = 100;
};

/// Called from a route handler: the connection closes after this response
/// (a refused request whose body was not read, say). Request threads only.
void close_after_response();

/// An `httplib::Server` whose connections go through the gate. Register
/// routes as usual; `start()` before `listen_after_bind()`, `shutdown()`
/// after `stop()` once the listening thread returned.
class gated_server : public httplib::Server {
public:
  explicit gated_server(gate_limits limits);
  ~gated_server() override;

  gated_server(const gated_server&) = delete;
  gated_server& operator=(const gated_server&) = delete;

  /// Starts the gate thread and the request threads, and widens the
  /// listen backlog. Call it after binding.
  void start();

  /// Closes every connection and joins the threads; idempotent.
  void shutdown();

private:
  using clock = std::chrono::steady_clock;

  /// A connection between requests: what it sent so far.
  struct connection {
    int fd = -1;
    std::string buffered;
    /// When it arrived at the gate (for eviction, oldest first).
    clock::time_point since;
    /// Closed when its request is not complete by then.
    clock::time_point deadline;
    /// Whether a byte of its next request arrived.
    bool started = false;
    /// Requests served on it so far.
    size_t served = 0;
    /// Whether the gate answered its request's `Expect: 100-continue`.
    bool continued = false;
  };

  /// Called by httplib's accept loop for each accepted socket: hands it to
  /// the gate and returns at once.
  bool process_and_close_socket(socket_t sock) override;

  void admit(connection conn);
  void run_gate();
  void serve_loop();
  void serve(connection conn);

  /// Reads what `conn` has sent; false when it must close.
  bool fill(connection& conn);

  /// Whether `conn.buffered` holds a whole request (header, and a body up
  /// to `max_body`) or what it holds must go to httplib as it is (too
  /// large: it answers 413 / 431).
  bool ready(const connection& conn) const;

  gate_limits limits_;
  std::mutex mtx_;
  std::condition_variable ready_cv_;
  /// New and kept-alive connections for the gate; guarded by `mtx_`.
  std::vector<connection> arriving_;
  /// Complete requests for the request threads; guarded by `mtx_`.
  std::deque<connection> requests_;
  bool stopping_ = false;
  bool started_ = false;
  /// Wakes the gate's poll when a connection arrives or on shutdown.
  int wake_fd_ = -1;
  std::thread gate_;
  std::vector<std::thread> workers_;
};

} // namespace pool::http_detail
