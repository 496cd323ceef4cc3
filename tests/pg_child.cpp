// A consumer process of a shared PostgreSQL queue, for tests/pg_shared.cpp:
// claims entries with pg_store, finishes each with twice its input,
// commits, and reports each step on a line of the output file, until
// killed. With HANG_AFTER, after that many operations it claims one more
// and hangs in it (a stuck job) until killed.
// Usage: pg_child CONNINFO OUTPUT_FILE LEASE_MS [HANG_AFTER]
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>

#include "pool/errors.hpp"
#include "pool/pg_store.hpp"

#include "store_config.hpp"

namespace {

using config = pool::test::store_config;

// Writes one line and flushes it: the parent reads the file after a kill.
void say(FILE* out, const char* what, const pool::attempt_id& id) {
  std::fprintf(out, "%s %llu %u\n", what,
               static_cast<unsigned long long>(id.operation), id.attempt);
  std::fflush(out);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: pg_child CONNINFO OUTPUT_FILE LEASE_MS "
                         "[HANG_AFTER]\n");
    return 2;
  }
  long hang_after = argc == 5 ? std::atol(argv[4]) : -1;
  long finished = 0;
  config cfg;
  caf::actor_system sys{cfg};
  auto lease = std::chrono::milliseconds{std::atoi(argv[3])};
  auto opened =
      pool::pg_store::open(sys, argv[1], pool::pg_options{}.lease(lease));
  if (!opened) {
    std::fprintf(stderr, "%s\n", pool::describe(opened.error()).c_str());
    return 1;
  }
  auto& store = **opened;
  auto out = std::fopen(argv[2], "a");
  if (out == nullptr)
    return 3;
  // Notifications (new work, leases taken back) wake the loop.
  std::mutex mtx;
  std::condition_variable cv;
  bool woken = false;
  store.set_wakeup([&] {
    std::lock_guard<std::mutex> guard{mtx};
    woken = true;
    cv.notify_one();
  });
  std::fprintf(out, "ready\n");
  std::fflush(out);
  auto next_renewal = sys.clock().now();
  for (;;) {
    auto now = sys.clock().now();
    if (now >= next_renewal) {
      auto lost = store.renew_leases(now);
      if (!lost || store.commit()) {
        std::fprintf(out, "renewal failed\n");
        std::fflush(out);
      }
      next_renewal = now + *store.lease_interval();
    }
    auto x = store.pop_due(now);
    if (!x) {
      static_cast<void>(store.commit());
      static_cast<void>(store.poll_notifications());
      std::unique_lock<std::mutex> guard{mtx};
      cv.wait_for(guard, std::chrono::milliseconds{50}, [&] { return woken; });
      woken = false;
      continue;
    }
    // A hand-out is a change: its commit marks the attempt started.
    if (auto err = store.commit()) {
      std::fprintf(out, "commit failed %s\n", pool::describe(err).c_str());
      std::fflush(out);
      continue;
    }
    say(out, "claim", x->id);
    if (finished == hang_after)
      for (;;)
        std::this_thread::sleep_for(std::chrono::seconds{1}); // until killed
    auto input = x->payload.get_as<int64_t>(0);
    if (auto err =
            store.finish(x->id.operation, caf::make_message(input * 2), now)) {
      std::fprintf(out, "refused %s\n", pool::describe(err).c_str());
      std::fflush(out);
      continue;
    }
    if (auto err = store.commit()) {
      std::fprintf(out, "commit failed %s\n", pool::describe(err).c_str());
      std::fflush(out);
      continue;
    }
    say(out, "done", x->id);
    ++finished;
  }
}
