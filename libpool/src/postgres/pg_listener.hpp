#pragma once

// Private to `pg_store`: a thread with its own connection that LISTENs on
// the queue's channel, collects what other stores notify and wakes the
// queue through a callback; without notifications, it wakes the queue
// every safety-poll interval.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include "pg_conn.hpp"
#include "pool/work_store.hpp"

namespace pool::detail {

/// The payload of a notification, as `pg_store` sends it: "<owner> w"
/// (entries added or taken back) or "<owner> d <id>,<id>,..." (outcomes).
/// Returns whether `payload` is well-formed; sets `from` and adds to `out`.
bool parse_notification(const std::string& payload, std::string& from,
                        store_notifications& out);

class pg_listener {
public:
  /// `setup` runs after each connect (the store's session lock and, after
  /// an outage, the renewal of its leases: see pg_leases.cpp).
  pg_listener(std::string conninfo, std::chrono::seconds connect_timeout,
              std::string channel, std::string self, caf::timespan safety_poll,
              std::vector<pg_conn::setup_step> setup = {});

  /// Stops and joins the thread. Blocks for at most one poll.
  ~pg_listener();

  pg_listener(const pg_listener&) = delete;

  pg_listener& operator=(const pg_listener&) = delete;

  /// Connects, LISTENs and starts the thread. Blocks while connecting.
  caf::error start();

  /// See `work_store::set_wakeup`. Thread-safe.
  void set_wakeup(std::function<void()> f);

  /// Returns and clears what arrived. Thread-safe; never blocks for long.
  store_notifications take();

private:
  caf::error listen();

  void run();

  /// Adds `x` to the inbox and wakes the queue, once until `take`.
  void deliver(const store_notifications& x);

  std::unique_ptr<pg_conn> db_;
  std::string channel_;
  std::string self_;
  caf::timespan safety_poll_;
  std::thread thread_;
  /// Written to stop the thread.
  int stop_fds_[2] = {-1, -1};
  std::mutex mtx_;
  std::function<void()> wakeup_;
  store_notifications inbox_;
  bool signalled_ = false;
};

} // namespace pool::detail
