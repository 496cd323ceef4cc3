#include "http_gate.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pool::http_detail {

namespace {

using clock_type = std::chrono::steady_clock;

thread_local bool close_requested = false;

/// Longest request header the gate waits for (request line included).
constexpr size_t max_header = 16 * 1024;

/// Bodies up to this size are read in even when over `max_body`, so that
/// httplib answers 413 to a connection that is not reset under the client.
constexpr size_t min_body_read = 64 * 1024;

/// Waits until `fd` is ready for `events` or `deadline` passed.
bool wait_for(int fd, short events, clock_type::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - clock_type::now());
    if (left.count() < 0)
      return false;
    pollfd p{fd, events, 0};
    auto n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR)
      continue;
    return n > 0;
  }
}

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr;
  socklen_t len = sizeof(addr);
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0)
    return;
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (::getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}

/// One request's bytes: what the gate read first, then the socket; every
/// wait ends at a deadline.
class gate_stream final : public httplib::Stream {
public:
  gate_stream(int fd, std::string buffered, clock_type::time_point read_until,
              clock_type::time_point write_until)
      : fd_(fd), buffered_(std::move(buffered)), read_until_(read_until),
        write_until_(write_until) {
    // nop
  }

  bool is_readable() const override {
    return pos_ < buffered_.size() || wait_for(fd_, POLLIN, read_until_);
  }

  bool is_writable() const override {
    return wait_for(fd_, POLLOUT, write_until_);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ < buffered_.size()) {
      auto n = std::min(size, buffered_.size() - pos_);
      std::memcpy(ptr, buffered_.data() + pos_, n);
      pos_ += n;
      return static_cast<ssize_t>(n);
    }
    for (;;) {
      if (!wait_for(fd_, POLLIN, read_until_))
        return -1;
      auto n = ::recv(fd_, ptr, size, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      return n;
    }
  }

  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      if (!wait_for(fd_, POLLOUT, write_until_))
        return -1;
      auto n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      return n;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(fd_, true, ip, port);
  }

  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(fd_, false, ip, port);
  }

  socket_t socket() const override {
    return fd_;
  }

  /// What was read ahead and not used: the start of the next request.
  std::string leftover() const {
    return buffered_.substr(std::min(pos_, buffered_.size()));
  }

private:
  int fd_;
  std::string buffered_;
  size_t pos_ = 0;
  clock_type::time_point read_until_;
  clock_type::time_point write_until_;
};

/// What the gate does with what a connection sent so far.
enum class verdict {
  wait,
  /// The header is in; its body is not yet.
  wait_body,
  serve,
  too_large_header,
  too_large_body,
  chunked
};

/// Where the line of header `name` (lower case, with the colon) starts in
/// `head`, or npos when absent.
size_t header_line_at(const std::string& head, const char* name) {
  std::string lower(head.size(), '\0');
  std::transform(head.begin(), head.end(), lower.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  auto at = lower.find(std::string{"\n"} + name);
  return at == std::string::npos ? at : at + 1;
}

/// Where the value of header `name` starts in `head`, or npos.
size_t header_value_at(const std::string& head, const char* name) {
  auto at = header_line_at(head, name);
  if (at == std::string::npos)
    return at;
  at += std::strlen(name);
  while (at < head.size() && (head[at] == ' ' || head[at] == '\t'))
    ++at;
  return at;
}

/// Where the header ends (the first byte after its blank line), or npos.
size_t header_end(const std::string& buffered) {
  auto crlf = buffered.find("\r\n\r\n");
  auto lf = buffered.find("\n\n");
  return std::min(crlf == std::string::npos ? crlf : crlf + 4,
                  lf == std::string::npos ? lf : lf + 2);
}

verdict judge(const std::string& buffered, size_t max_body) {
  auto end = header_end(buffered);
  if (end == std::string::npos)
    return buffered.size() > max_header ? verdict::too_large_header
                                        : verdict::wait;
  if (end > max_header)
    return verdict::too_large_header;
  auto head = buffered.substr(0, end);
  if (header_value_at(head, "transfer-encoding:") != std::string::npos)
    return verdict::chunked;
  auto at = header_value_at(head, "content-length:");
  if (at == std::string::npos)
    return verdict::serve;
  size_t length = 0;
  size_t digits = 0;
  for (; at < head.size() && std::isdigit(static_cast<unsigned char>(head[at]));
       ++at, ++digits) {
    if (length > std::max(max_body, min_body_read))
      break;
    length = length * 10 + static_cast<size_t>(head[at] - '0');
  }
  if (digits == 0)
    return verdict::serve; // malformed: httplib answers 400
  if (length > std::max(max_body, min_body_read))
    return verdict::too_large_body;
  return buffered.size() - end >= length ? verdict::serve : verdict::wait_body;
}

/// Whether the request in `buffered` (its header is in) asks for
/// `100 Continue` before it sends its body.
bool expects_continue(const std::string& buffered) {
  auto head = buffered.substr(0, header_end(buffered));
  return header_line_at(head, "expect:") != std::string::npos;
}

/// Removes the `Expect` line from the header in `buffered`: the gate
/// answered it, and httplib must not answer it again.
void drop_expect(std::string& buffered) {
  auto head = buffered.substr(0, header_end(buffered));
  auto at = header_line_at(head, "expect:");
  if (at == std::string::npos)
    return;
  auto nl = buffered.find('\n', at);
  buffered.erase(at, nl == std::string::npos ? nl : nl + 1 - at);
}

/// Answers `status` with a JSON error (best effort: the socket is not
/// waited for) and closes.
void refuse(int fd, const char* status, const char* what) {
  if (status != nullptr) {
    std::string body = std::string{"{\"error\":\""} + what + "\"}\n";
    std::string text = std::string{"HTTP/1.1 "} + status +
                       "\r\nContent-Type: application/json\r\n"
                       "Content-Length: " +
                       std::to_string(body.size()) +
                       "\r\nConnection: close\r\n\r\n" + body;
    [[maybe_unused]] auto n =
        ::send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

} // namespace

void close_after_response() {
  close_requested = true;
}

gated_server::gated_server(gate_limits limits) : limits_(limits) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  // httplib's accept loop only hands sockets over: one thread does.
  new_task_queue = [] { return new httplib::ThreadPool(1); };
  // What the responses advertise (`Keep-Alive: timeout=..., max=...`).
  set_keep_alive_timeout(std::max<time_t>(
      1, static_cast<time_t>(limits_.keep_alive_timeout.count() / 1000)));
  set_keep_alive_max_count(limits_.keep_alive_requests);
}

gated_server::~gated_server() {
  shutdown();
  if (wake_fd_ >= 0)
    ::close(wake_fd_);
}

void gated_server::start() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (started_ || stopping_)
    return;
  started_ = true;
  // httplib listens with a backlog of 5: a burst of connections (64 slow
  // clients, say) overflowed it, and each dropped handshake cost a client
  // a 1 s SYN retransmit. Linux takes a second listen() as a new backlog.
  if (svr_sock_ != INVALID_SOCKET)
    ::listen(svr_sock_, SOMAXCONN);
  gate_ = std::thread{[this] { run_gate(); }};
  for (size_t i = 0; i < std::max<size_t>(1, limits_.threads); ++i)
    workers_.emplace_back([this] { serve_loop(); });
}

void gated_server::shutdown() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (stopping_)
      return;
    stopping_ = true;
  }
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof(one));
  ready_cv_.notify_all();
  if (gate_.joinable())
    gate_.join();
  for (auto& t : workers_)
    t.join();
  workers_.clear();
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& c : arriving_)
    refuse(c.fd, nullptr, nullptr);
  arriving_.clear();
  for (auto& c : requests_)
    refuse(c.fd, nullptr, nullptr);
  requests_.clear();
}

bool gated_server::process_and_close_socket(socket_t sock) {
  connection conn;
  conn.fd = sock;
  conn.since = clock::now();
  conn.deadline = conn.since + limits_.request_timeout;
  conn.started = true; // a new connection's deadline counts from its start
  admit(std::move(conn));
  return true;
}

void gated_server::admit(connection conn) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!stopping_ && started_) {
      arriving_.push_back(std::move(conn));
      conn.fd = -1;
    }
  }
  if (conn.fd >= 0) {
    refuse(conn.fd, nullptr, nullptr);
    return;
  }
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof(one));
}

bool gated_server::fill(connection& conn) {
  char buf[16 * 1024];
  auto cap = max_header + std::max(limits_.max_body, min_body_read) + 1;
  while (conn.buffered.size() < cap) {
    auto n = ::recv(conn.fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return true;
    if (n <= 0)
      return false; // closed by the client, or broken
    if (!conn.started) {
      // The first byte of a kept-alive connection's next request.
      conn.started = true;
      conn.deadline = clock::now() + limits_.request_timeout;
    }
    conn.buffered.append(buf, static_cast<size_t>(n));
  }
  return true;
}

void gated_server::run_gate() {
  std::vector<connection> conns;
  std::vector<pollfd> fds;
  for (;;) {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (stopping_)
        break;
      for (auto& c : arriving_)
        conns.push_back(std::move(c));
      arriving_.clear();
    }
    // Hand over complete requests; close expired and refused connections.
    auto now = clock::now();
    std::vector<connection> waiting;
    for (auto& c : conns) {
      switch (judge(c.buffered, limits_.max_body)) {
        case verdict::serve: {
          if (c.continued)
            drop_expect(c.buffered);
          std::lock_guard<std::mutex> guard{mtx_};
          requests_.push_back(std::move(c));
          ready_cv_.notify_one();
          continue;
        }
        case verdict::too_large_header:
          refuse(c.fd, "431 Request Header Fields Too Large",
                 "request header too large");
          continue;
        case verdict::too_large_body:
          refuse(c.fd, "413 Payload Too Large", "request body too large");
          continue;
        case verdict::chunked:
          refuse(c.fd, "411 Length Required",
                 "send the body with a Content-Length, not chunked");
          continue;
        case verdict::wait_body:
          // The client waits for leave to send its body: the gate grants it
          // (best effort), so no request thread ever waits for the body.
          if (!c.continued && expects_continue(c.buffered)) {
            c.continued = true;
            const char text[] = "HTTP/1.1 100 Continue\r\n\r\n";
            [[maybe_unused]] auto n = ::send(c.fd, text, sizeof(text) - 1,
                                             MSG_NOSIGNAL | MSG_DONTWAIT);
          }
          break;
        case verdict::wait:
          break;
      }
      if (c.deadline <= now) {
        refuse(c.fd, c.buffered.empty() ? nullptr : "408 Request Timeout",
               "request not complete in time");
        continue;
      }
      waiting.push_back(std::move(c));
    }
    conns = std::move(waiting);
    // Too many waiting: the one waiting longest goes.
    while (conns.size() > limits_.max_waiting) {
      auto oldest =
          std::min_element(conns.begin(), conns.end(),
                           [](const connection& x, const connection& y) {
                             return x.since < y.since;
                           });
      refuse(oldest->fd, nullptr, nullptr);
      conns.erase(oldest);
    }
    auto timeout = std::chrono::milliseconds{1000};
    for (auto& c : conns)
      timeout = std::min(timeout,
                         std::chrono::duration_cast<std::chrono::milliseconds>(
                             c.deadline - now) +
                             std::chrono::milliseconds{1});
    fds.clear();
    fds.push_back(pollfd{wake_fd_, POLLIN, 0});
    for (auto& c : conns)
      fds.push_back(pollfd{c.fd, POLLIN, 0});
    auto n = ::poll(fds.data(), fds.size(),
                    static_cast<int>(std::max<int64_t>(0, timeout.count())));
    if (n <= 0)
      continue;
    if (fds[0].revents != 0) {
      uint64_t count = 0;
      [[maybe_unused]] auto r = ::read(wake_fd_, &count, sizeof(count));
    }
    std::vector<connection> alive;
    for (size_t i = 0; i < conns.size(); ++i) {
      if (fds[i + 1].revents != 0 && !fill(conns[i])) {
        refuse(conns[i].fd, nullptr, nullptr);
        continue;
      }
      alive.push_back(std::move(conns[i]));
    }
    conns = std::move(alive);
  }
  for (auto& c : conns)
    refuse(c.fd, nullptr, nullptr);
}

void gated_server::serve_loop() {
  for (;;) {
    connection conn;
    {
      std::unique_lock<std::mutex> guard{mtx_};
      ready_cv_.wait(guard, [this] { return stopping_ || !requests_.empty(); });
      if (stopping_)
        return;
      conn = std::move(requests_.front());
      requests_.pop_front();
    }
    serve(std::move(conn));
  }
}

void gated_server::serve(connection conn) {
  close_requested = false;
  auto now = clock::now();
  gate_stream strm{conn.fd, std::move(conn.buffered),
                   now + limits_.request_timeout, now + limits_.write_timeout};
  ++conn.served;
  auto last = conn.served >= limits_.keep_alive_requests;
  auto closed = false;
  auto ok = process_request(strm, last, closed, nullptr);
  if (!ok || closed || last || close_requested) {
    refuse(conn.fd, nullptr, nullptr);
    return;
  }
  conn.buffered = strm.leftover();
  conn.continued = false;
  conn.since = clock::now();
  conn.started = !conn.buffered.empty();
  conn.deadline = conn.since + (conn.started ? limits_.request_timeout
                                             : limits_.keep_alive_timeout);
  admit(std::move(conn));
}

} // namespace pool::http_detail
