// Capacity: many cooperative workers (spawn time, idle memory, stats
// latency) and a million queued or delayed entries (memory per entry,
// enqueue and dequeue cost), in pool::memory_store and through a pool.

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
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

caf::behavior echo() {
  return {[](int32_t x) { return x; }};
}

/// Lets the RSS settle after spawning: workers initialize asynchronously.
void settle() {
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
}

/// Blocks every job until opened.
struct gate {
  std::mutex mtx;
  std::condition_variable cv;
  bool open = false;

  void wait() {
    std::unique_lock<std::mutex> guard{mtx};
    cv.wait(guard, [this] { return open; });
  }

  void release() {
    {
      std::lock_guard<std::mutex> guard{mtx};
      open = true;
    }
    cv.notify_all();
  }
};

pool::pool_stats stats_of(caf::actor_system& sys, const caf::actor& pool) {
  caf::scoped_actor self{sys};
  pool::pool_stats result;
  self->request(pool, caf::infinite, pool::pool_stats_atom_v)
      .receive([&](pool::pool_stats& x) { result = x; },
               [&](caf::error& err) {
                 std::fprintf(stderr, "stats failed: %s\n",
                              pool::describe(err).c_str());
               });
  return result;
}

/// Submits `n` trivial operations (`delayed`: each due in an hour) to a
/// pool whose single worker blocks on a gate, measures the RSS per entry
/// and the enqueue cost, then opens the gate and times the first `drain`
/// results (0: none). The submitter sends asynchronously (no response
/// handler per entry on its side) in batches closed by a stats request, so
/// the shepherd's mailbox never holds more than a batch.
void through_pool(const settings& cfg, csv_file& out, size_t n, bool delayed,
                  pool::worker_kind kind, size_t drain) {
  constexpr size_t batch = 1000;
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto g = std::make_shared<gate>();
  auto job = [g](int32_t x) {
    g->wait(); // (Blocks a scheduler thread when cooperative: 1 of 4.)
    return x;
  };
  auto pool =
      pool::spawn_pool(sys, job, pool::pool_options{}.workers(1).kind(kind));
  stats_of(sys, *pool);
  settle();
  trim_heap();
  auto rss0 = resident_bytes();
  struct progress {
    std::promise<std::pair<double, pool::pool_stats>> queued;
    std::promise<double> drained;
    size_t replies = 0;
    time_point open_at;
  };
  auto pr = std::make_shared<progress>();
  auto queued = pr->queued.get_future();
  auto drained = pr->drained.get_future();
  auto target = *pool;
  auto submitter =
      sys.spawn([pr, target, n, delayed, drain](caf::event_based_actor* self) {
        auto t0 = clock_type::now();
        auto sent = std::make_shared<size_t>(0);
        auto send_batch = std::make_shared<std::function<void()>>();
        *send_batch = [=] {
          for (size_t k = 0; k < batch && *sent < n; ++k, ++*sent) {
            auto x = static_cast<int32_t>(*sent);
            if (delayed)
              self->send(target, pool::submit_after_atom_v,
                         caf::timespan{std::chrono::hours{1}}, x);
            else
              self->send(target, pool::submit_atom_v, x);
          }
          self->request(target, caf::infinite, pool::pool_stats_atom_v)
              .then([=](pool::pool_stats& stats) {
                if (*sent < n) {
                  (*send_batch)();
                  return;
                }
                pr->queued.set_value(
                    {seconds_between(t0, clock_type::now()), stats});
                *send_batch = nullptr; // (It holds itself.)
                if (drain == 0)
                  self->quit();
              });
        };
        (*send_batch)();
        return caf::behavior{
            [=](int32_t) {
              if (++pr->replies == drain) {
                pr->drained.set_value(
                    seconds_between(pr->open_at, clock_type::now()));
                self->quit();
              }
            },
        };
      });
  auto [seconds, stats] = queued.get();
  settle();
  auto rss1 = resident_bytes();
  auto entries = delayed ? stats.delayed : stats.available + stats.busy;
  auto b = static_cast<double>(rss1 - rss0) / n;
  auto e = seconds * 1e9 / n;
  double d = 0;
  if (drain > 0) {
    pr->open_at = clock_type::now();
    g->release();
    d = drained.get() * 1e9 / drain;
  }
  auto via = std::string{"pool_"} + pool::to_string(kind);
  out.rowf("%s,%s,%zu,0,%lld,%.1f,%.1f,%.1f,%d,%zu", via.c_str(),
           delayed ? "delayed" : "queued", n,
           static_cast<long long>(rss1 - rss0), b, e, d, entries == n ? 1 : 0,
           drain);
  std::printf("  through a pool (%s worker), %-7s: %.0f B/entry, enqueue %.0f "
              "ns/entry",
              pool::to_string(kind).c_str(), delayed ? "delayed" : "queued", b,
              e);
  if (drain > 0)
    std::printf(", dequeue+run+reply %.0f ns/entry over the first %zu", d,
                drain);
  std::printf(" (%llu entries in stats)\n",
              static_cast<unsigned long long>(entries));
  g->release();
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(submitter, caf::exit_reason::user_shutdown);
}

} // namespace

void run_workers(const settings& cfg) {
  std::printf("== cooperative workers: spawn time, idle memory, stats "
              "latency\n");
  auto reps = cfg.count(3, 1);
  csv_file out{cfg, "workers.csv",
               "target,workers,rep,spawn_ms,rss_delta_bytes,bytes_per_worker,"
               "stats_samples,stats_p50_us,stats_p99_us"};
  for (size_t n : {size_t{4}, size_t{1000}, size_t{10000}}) {
    std::vector<double> pool_ms;
    std::vector<double> pool_bytes;
    std::vector<double> stats_p50;
    std::vector<double> stats_p99;
    std::vector<double> caf_ms;
    std::vector<double> caf_bytes;
    for (size_t rep = 0; rep < reps; ++rep) {
      {
        system_config sys_cfg;
        caf::actor_system sys{sys_cfg};
        settle();
        trim_heap();
        auto rss0 = resident_bytes();
        auto t0 = clock_type::now();
        auto pool =
            pool::spawn_pool(sys, identity, pool::pool_options{}.workers(n));
        // Spawned = the shepherd has started all workers and answers.
        auto stats = stats_of(sys, *pool);
        auto ms = seconds_between(t0, clock_type::now()) * 1e3;
        if (stats.workers != n)
          std::printf("  !! expected %zu workers, stats say %llu\n", n,
                      static_cast<unsigned long long>(stats.workers));
        settle();
        auto bytes = static_cast<double>(resident_bytes() - rss0);
        auto samples = run_sequential<pool::pool_stats>(
            sys, cfg.count(500, 50), std::chrono::microseconds{100},
            [p = *pool](caf::event_based_actor* self, size_t) {
              return self->request(p, caf::infinite, pool::pool_stats_atom_v);
            });
        auto p50 = quantile(samples, 0.5);
        auto p99 = quantile(samples, 0.99);
        pool_ms.push_back(ms);
        pool_bytes.push_back(bytes / n);
        stats_p50.push_back(p50);
        stats_p99.push_back(p99);
        out.rowf("pool,%zu,%zu,%.3f,%.0f,%.1f,%zu,%.1f,%.1f", n, rep, ms, bytes,
                 bytes / n, samples.size(), p50 / 1e3, p99 / 1e3);
        caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
      }
      {
        // Baseline: the same number of plain CAF actors.
        system_config sys_cfg;
        caf::actor_system sys{sys_cfg};
        settle();
        trim_heap();
        auto rss0 = resident_bytes();
        auto t0 = clock_type::now();
        std::vector<caf::actor> actors;
        actors.reserve(n);
        for (size_t i = 0; i < n; ++i)
          actors.push_back(sys.spawn(echo));
        // Spawned = the last one answers (it initialized after the others
        // were scheduled).
        caf::scoped_actor self{sys};
        self->request(actors.back(), caf::infinite, int32_t{1})
            .receive([](int32_t) {}, [](caf::error&) {});
        auto ms = seconds_between(t0, clock_type::now()) * 1e3;
        settle();
        auto bytes = static_cast<double>(resident_bytes() - rss0);
        caf_ms.push_back(ms);
        caf_bytes.push_back(bytes / n);
        out.rowf("caf_actors,%zu,%zu,%.3f,%.0f,%.1f,0,0,0", n, rep, ms, bytes,
                 bytes / n);
        for (auto& a : actors)
          caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
      }
    }
    std::printf("  %5zu workers: pool spawn %.1f ms (%.1f-%.1f), %.0f B/worker;"
                " stats p50 %.1f us p99 %.1f us | %zu CAF actors: %.1f ms, "
                "%.0f B/actor\n",
                n, spread_of(pool_ms).median, spread_of(pool_ms).min,
                spread_of(pool_ms).max, spread_of(pool_bytes).median,
                spread_of(stats_p50).median / 1e3,
                spread_of(stats_p99).median / 1e3, n, spread_of(caf_ms).median,
                spread_of(caf_bytes).median);
  }
}

void run_queue(const settings& cfg) {
  auto n = cfg.count(1000000, 20000);
  auto reps = cfg.count(3, 1);
  std::printf("== %zu queued / delayed entries\n", n);
  csv_file out{cfg, "queue.csv",
               "via,entries,n,rep,rss_delta_bytes,bytes_per_entry,"
               "enqueue_ns_per_entry,dequeue_ns_per_entry,checked,dequeued"};
  // -- directly in pool::memory_store --------------------------------------
  for (auto delayed : {false, true}) {
    std::vector<double> bytes;
    std::vector<double> enq;
    std::vector<double> deq;
    for (size_t rep = 0; rep < reps; ++rep) {
      std::mt19937_64 rng{rep};
      std::uniform_int_distribution<int64_t> spread_ns{0, 3'600'000'000'000};
      trim_heap();
      auto rss0 = resident_bytes();
      auto store = std::make_unique<pool::memory_store>();
      auto now = caf::actor_clock::clock_type::now();
      auto t0 = clock_type::now();
      for (size_t i = 0; i < n; ++i) {
        auto due = now;
        if (delayed)
          due +=
              std::chrono::hours{1} + std::chrono::nanoseconds{spread_ns(rng)};
        pool::work_record rec{pool::attempt_id{i + 1, 1},
                              caf::make_message(static_cast<int32_t>(i))};
        store->push(std::move(rec), due, now);
      }
      auto t1 = clock_type::now();
      auto rss1 = resident_bytes();
      auto later = delayed ? now + std::chrono::hours{3} : now;
      size_t popped = 0;
      auto t2 = clock_type::now();
      while (store->pop_due(later))
        ++popped;
      auto t3 = clock_type::now();
      auto b = static_cast<double>(rss1 - rss0) / n;
      auto e = static_cast<double>(ns_between(t0, t1)) / n;
      auto d = static_cast<double>(ns_between(t2, t3)) / n;
      bytes.push_back(b);
      enq.push_back(e);
      deq.push_back(d);
      out.rowf("store,%s,%zu,%zu,%lld,%.1f,%.1f,%.1f,%d,%zu",
               delayed ? "delayed" : "queued", n, rep,
               static_cast<long long>(rss1 - rss0), b, e, d,
               popped == n ? 1 : 0, popped);
      store.reset();
    }
    std::printf("  memory_store, %-7s: %.0f B/entry, enqueue %.0f ns, "
                "dequeue %.0f ns per entry\n",
                delayed ? "delayed" : "queued", spread_of(bytes).median,
                spread_of(enq).median, spread_of(deq).median);
  }
  // -- through a pool --------------------------------------------------------
  auto drain_limit = cfg.count(20000, 2000);
  through_pool(cfg, out, n, false, pool::worker_kind::dedicated, drain_limit);
  through_pool(cfg, out, n, false, pool::worker_kind::cooperative, n);
  through_pool(cfg, out, n, true, pool::worker_kind::cooperative, 0);
}

} // namespace bench
