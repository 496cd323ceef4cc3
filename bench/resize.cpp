// Resize at scale: a pool of cooperative workers grows from 2 to 1,000,000
// (100,000 in the quick version; POOL_BENCH_RESIZE=N for another size) and
// shrinks back to 2, while a poller asks for stats every 50 ms. The figures
// that matter: the time of each resize against the size change, and the
// longest a stats request waited meanwhile. (A shrink step waits until the
// workers the last one stopped are gone; without that, shrinking was
// quadratic: 400,000 took 73 s.)
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <pool/all.hpp>

#include "workloads.hpp"

namespace bench {

namespace {

int32_t identity(int32_t x) {
  return x;
}

/// Asks for stats every `gap` until `stop`; keeps the longest wait.
struct poller {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> longest_ns{0};
  std::atomic<uint64_t> answered{0};
  std::thread thread;

  poller(caf::actor_system& sys, caf::actor pool) {
    thread = std::thread{[this, &sys, pool] {
      caf::scoped_actor self{sys};
      while (!stop.load()) {
        auto t0 = clock_type::now();
        self->request(pool, caf::infinite, pool::pool_stats_atom_v)
            .receive([](pool::pool_stats&) {}, [](caf::error&) {});
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    clock_type::now() - t0)
                    .count();
        if (ns > longest_ns.load())
          longest_ns.store(ns);
        ++answered;
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
      }
    }};
  }

  /// Ends polling; returns the longest wait in ms and resets it.
  double take_longest_ms() {
    auto ns = longest_ns.exchange(0);
    return static_cast<double>(ns) / 1e6;
  }

  ~poller() {
    stop = true;
    thread.join();
  }
};

double resize_to(caf::actor_system& sys, const caf::actor& pool, uint64_t n) {
  caf::scoped_actor self{sys};
  auto t0 = clock_type::now();
  self->request(pool, caf::infinite, pool::resize_atom_v, n)
      .receive([] {},
               [](caf::error& err) {
                 std::fprintf(stderr, "resize failed: %s\n",
                              pool::describe(err).c_str());
               });
  return seconds_between(t0, clock_type::now());
}

} // namespace

void run_resize(const settings& cfg) {
  uint64_t big = cfg.quick ? 100'000 : 1'000'000;
  if (auto x = std::getenv("POOL_BENCH_RESIZE"))
    big = std::strtoull(x, nullptr, 10);
  std::printf("== resize 2 -> %llu -> 2 cooperative workers, stats polled "
              "every 50 ms\n",
              static_cast<unsigned long long>(big));
  csv_file out{cfg, "resize.csv",
               "direction,workers,seconds,longest_stats_wait_ms,rss_bytes"};
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto pool = pool::spawn_pool(sys, identity, pool::pool_options{}.workers(2));
  if (!pool) {
    std::printf("  !! %s\n", pool::describe(pool.error()).c_str());
    return;
  }
  {
    poller poll{sys, *pool};
    auto grow = resize_to(sys, *pool, big);
    auto grow_wait = poll.take_longest_ms();
    auto rss = resident_bytes();
    out.rowf("grow,%llu,%.3f,%.1f,%lld", static_cast<unsigned long long>(big),
             grow, grow_wait, static_cast<long long>(rss));
    auto shrink = resize_to(sys, *pool, 2);
    auto shrink_wait = poll.take_longest_ms();
    out.rowf("shrink,2,%.3f,%.1f,%lld", shrink, shrink_wait,
             static_cast<long long>(resident_bytes()));
    std::printf("  grow to %llu: %.2f s, longest stats wait %.1f ms, RSS "
                "%.0f MiB | shrink to 2: %.2f s, longest stats wait %.1f ms "
                "(%llu stats answers)\n",
                static_cast<unsigned long long>(big), grow, grow_wait,
                static_cast<double>(rss) / (1 << 20), shrink, shrink_wait,
                static_cast<unsigned long long>(poll.answered.load()));
    std::fflush(stdout);
  }
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
}

} // namespace bench
