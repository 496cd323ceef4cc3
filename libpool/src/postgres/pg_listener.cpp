#include "pg_listener.hpp"

#include <cerrno>
#include <cstdlib>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "pool/errors.hpp"

namespace pool::detail {

namespace {

/// More outcomes than this waiting in the inbox: forget them, say so.
constexpr size_t max_waiting_outcomes = 100000;

} // namespace

bool parse_notification(const std::string& payload, std::string& from,
                        store_notifications& out) {
  auto space = payload.find(' ');
  if (space == std::string::npos || space == 0 || space + 2 > payload.size())
    return false;
  from = payload.substr(0, space);
  auto kind = payload[space + 1];
  if (kind == 'w') {
    out.work = true;
    return true;
  }
  if (kind != 'd' || space + 3 > payload.size())
    return false;
  auto rest = payload.c_str() + space + 3;
  while (*rest != '\0') {
    char* end = nullptr;
    auto id = std::strtoull(rest, &end, 10);
    if (end == rest)
      return false;
    out.finished.push_back(id);
    rest = *end == ',' ? end + 1 : end;
  }
  return true;
}

pg_listener::pg_listener(std::string conninfo,
                         std::chrono::seconds connect_timeout,
                         std::string channel, std::string self,
                         caf::timespan safety_poll,
                         std::vector<pg_conn::setup_step> setup)
    : db_(std::make_unique<pg_conn>(std::move(conninfo), connect_timeout)),
      channel_(std::move(channel)), self_(std::move(self)),
      safety_poll_(safety_poll) {
  db_->set_setup(std::move(setup));
}

pg_listener::~pg_listener() {
  if (thread_.joinable()) {
    char stop = 1;
    // Cannot fail short of a closed pipe; the thread then ends at its next
    // poll anyway.
    static_cast<void>(::write(stop_fds_[1], &stop, 1));
    thread_.join();
  }
  for (auto fd : stop_fds_)
    if (fd >= 0)
      ::close(fd);
}

caf::error pg_listener::listen() {
  auto text = "LISTEN \"" + channel_ + "\"";
  return db_->exec(text.c_str(), "listening on channel " + channel_);
}

caf::error pg_listener::start() {
  if (auto err = db_->connect())
    return err;
  if (auto err = listen())
    return err;
  if (::pipe2(stop_fds_, O_CLOEXEC | O_NONBLOCK) != 0)
    return caf::make_error(pool_errc::store_failed, db_->target(),
                           std::string{"cannot create a pipe for the "
                                       "listener thread"});
  thread_ = std::thread{[this] { run(); }};
  return caf::none;
}

void pg_listener::set_wakeup(std::function<void()> f) {
  std::function<void()> now;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    wakeup_ = std::move(f);
    auto waiting = inbox_.work || inbox_.missed || !inbox_.finished.empty();
    if (wakeup_ && waiting && !signalled_) {
      signalled_ = true;
      now = wakeup_;
    }
  }
  if (now)
    now();
}

store_notifications pg_listener::take() {
  std::lock_guard<std::mutex> guard{mtx_};
  auto result = std::move(inbox_);
  inbox_ = store_notifications{};
  signalled_ = false;
  return result;
}

void pg_listener::deliver(const store_notifications& x) {
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    inbox_.work = inbox_.work || x.work;
    inbox_.missed = inbox_.missed || x.missed;
    inbox_.finished.insert(inbox_.finished.end(), x.finished.begin(),
                           x.finished.end());
    if (inbox_.finished.size() > max_waiting_outcomes) {
      inbox_.finished.clear();
      inbox_.missed = true;
    }
    if (wakeup_ && !signalled_) {
      signalled_ = true;
      wake = wakeup_;
    }
  }
  if (wake)
    wake();
}

void pg_listener::run() {
  using namespace std::chrono;
  auto safety_ms = static_cast<int>(
      std::max<int64_t>(1, duration_cast<milliseconds>(safety_poll_).count()));
  bool up = true;
  for (;;) {
    pollfd fds[2] = {{up ? PQsocket(db_->get()) : -1, POLLIN, 0},
                     {stop_fds_[0], POLLIN, 0}};
    // While down, try again every second.
    auto n = ::poll(fds, 2, up ? safety_ms : 1000);
    if (n < 0 && errno == EINTR)
      continue;
    if (n > 0 && (fds[1].revents & POLLIN) != 0)
      return;
    if (!up) {
      if (!db_->connect() && !listen()) {
        up = true;
        // Whatever was notified meanwhile is lost.
        store_notifications x;
        x.work = true;
        x.missed = true;
        deliver(x);
      }
      continue;
    }
    if (n == 0) {
      // The safety poll.
      store_notifications x;
      x.work = true;
      deliver(x);
      continue;
    }
    store_notifications x;
    if (PQconsumeInput(db_->get()) == 0 || !db_->ok()) {
      up = false;
      x.work = true;
      x.missed = true;
      deliver(x);
      continue;
    }
    bool any = false;
    while (auto note = PQnotifies(db_->get())) {
      std::string from;
      store_notifications y;
      if (parse_notification(note->extra != nullptr ? note->extra : "", from,
                             y) &&
          from != self_) {
        any = true;
        x.work = x.work || y.work;
        x.finished.insert(x.finished.end(), y.finished.begin(),
                          y.finished.end());
      }
      PQfreemem(note);
    }
    if (any)
      deliver(x);
  }
}

} // namespace pool::detail
