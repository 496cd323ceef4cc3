// Throughput and idle latency of trivial jobs: the pool against CAF's
// actor_pool, a bare actor and a mutex + condition-variable thread pool.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_pool.hpp>
#include <caf/all.hpp>
#include <pool/all.hpp>

#include "workloads.hpp"

namespace bench {

namespace {

constexpr size_t window = 512;
constexpr size_t bulk_window = 64;
constexpr size_t bulk_batch = 256;

using batch = std::vector<int32_t>;

batch twice_all(batch xs) {
  for (auto& x : xs)
    x = twice(x);
  return xs;
}

/// The same job code as an actor: for actor_pool workers and the bare actor.
caf::behavior doubler() {
  return {
      [](int32_t x) { return twice(x); },
      [](batch& xs) { return twice_all(std::move(xs)); },
  };
}

caf::actor make_actor_pool(caf::actor_system& sys, size_t workers) {
  return caf::actor_pool::make(
      sys.dummy_execution_unit(), workers,
      [&sys] { return sys.spawn(doubler); }, caf::actor_pool::round_robin());
}

/// Runs each target `reps` times, interleaved, after a warm-up of n / 10;
/// writes rows and prints the median with its spread.
void measure(const settings& cfg, csv_file& out, const std::string& workload,
             std::vector<target>& targets, size_t n, size_t jobs_per_request,
             size_t reps) {
  keep_chosen(targets, [](const target& t) { return t.name; });
  std::vector<std::vector<double>> rates(targets.size());
  alternate(targets, std::max<size_t>(n / 10, 1), n, reps,
            [&](size_t k, size_t rep, const window_result& res) {
              auto jobs = n * jobs_per_request;
              auto rate = static_cast<double>(jobs) / res.seconds;
              rates[k].push_back(rate);
              out.rowf("%s,%s,%zu,%zu,%zu,%.6f,%.1f,%zu", workload.c_str(),
                       targets[k].name.c_str(), rep, jobs, jobs_per_request,
                       res.seconds, rate, res.errors);
            });
  for (size_t k = 0; k < targets.size(); ++k) {
    auto s = spread_of(rates[k]);
    std::printf("  %-22s %12.0f jobs/s  (min %.0f, max %.0f)\n",
                targets[k].name.c_str(), s.median, s.min, s.max);
  }
}

const char* throughput_header =
    "workload,target,rep,jobs,jobs_per_request,seconds,jobs_per_s,errors";

} // namespace

void run_trivial(const settings& cfg) {
  std::printf("== trivial jobs, window %zu, 2 workers\n", window);
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto n = cfg.count(100000, 10000);
  auto reps = cfg.count(5, 1);
  csv_file out{cfg, "trivial.csv", throughput_header};
  {
    auto coop = spawn_checked(
        pool::spawn_pool(sys, twice, pool::pool_options{}.workers(2)));
    auto dedicated = spawn_checked(pool::spawn_pool(
        sys, twice,
        pool::pool_options{}.workers(2).kind(pool::worker_kind::dedicated)));
    auto ap = make_actor_pool(sys, 2);
    auto bare = sys.spawn(doubler);
    cv_thread_pool cv_pool{2};
    std::vector<target> targets{
        pool_target(sys, "pool", coop, window),
        pool_target(sys, "pool_dedicated", dedicated, window),
        actor_target(sys, "actor_pool", ap, window),
        actor_target(sys, "bare_actor", bare, window),
        {"cv_thread_pool",
         [&cv_pool](size_t jobs) {
           return window_result{run_cv_window(cv_pool, jobs, window), 0};
         }},
    };
    measure(cfg, out, "trivial", targets, n, 1, reps);
    for (auto& x : {coop, dedicated, ap, bare})
      caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
  }
}

void run_bulk(const settings& cfg) {
  std::printf("== bulk: %zu inputs per submit, window %zu, 2 workers\n",
              bulk_batch, bulk_window);
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto n = cfg.count(20000, 1000);
  auto reps = cfg.count(5, 1);
  csv_file out{cfg, "bulk.csv", throughput_header};
  {
    auto coop = spawn_checked(
        pool::spawn_pool(sys, twice_all, pool::pool_options{}.workers(2)));
    auto ap = make_actor_pool(sys, 2);
    auto make_batch = [](size_t i) {
      return batch(bulk_batch, static_cast<int32_t>(i));
    };
    std::vector<target> targets{
        {"pool",
         [&sys, coop, make_batch](size_t jobs) {
           return run_window<batch>(
               sys, jobs, bulk_window,
               [coop, make_batch](caf::event_based_actor* self, size_t i) {
                 return self->request(coop, caf::infinite, pool::submit_atom_v,
                                      make_batch(i));
               });
         }},
        {"actor_pool",
         [&sys, ap, make_batch](size_t jobs) {
           return run_window<batch>(
               sys, jobs, bulk_window,
               [ap, make_batch](caf::event_based_actor* self, size_t i) {
                 return self->request(ap, caf::infinite, make_batch(i));
               });
         }},
    };
    measure(cfg, out, "bulk", targets, n, bulk_batch, reps);
    for (auto& x : {coop, ap})
      caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
  }
}

void run_latency(const settings& cfg) {
  auto gap = std::chrono::microseconds{200};
  std::printf("== idle latency: one job at a time, %lld us apart\n",
              static_cast<long long>(gap.count()));
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto per_rep = cfg.count(1000, 300);
  auto reps = cfg.count(5, 1);
  csv_file raw{cfg, "latency_idle_raw.csv", "target,rep,seq,latency_ns"};
  csv_file out{cfg, "latency_idle.csv",
               "target,rep,samples,p50_ns,p99_ns,mean_ns"};
  auto coop = spawn_checked(
      pool::spawn_pool(sys, twice, pool::pool_options{}.workers(2)));
  auto dedicated = spawn_checked(pool::spawn_pool(
      sys, twice,
      pool::pool_options{}.workers(2).kind(pool::worker_kind::dedicated)));
  auto ap = make_actor_pool(sys, 2);
  auto bare = sys.spawn(doubler);
  auto bare_detached = sys.spawn<caf::detached>(doubler);
  cv_thread_pool cv_pool{2};
  using sampler = std::function<std::vector<double>(size_t)>;
  auto via_pool = [&](caf::actor pool) -> sampler {
    return [&sys, pool, gap](size_t n) {
      return run_sequential<int32_t>(
          sys, n, gap, [pool](caf::event_based_actor* self, size_t i) {
            return self->request(pool, caf::infinite, pool::submit_atom_v,
                                 static_cast<int32_t>(i));
          });
    };
  };
  auto via_actor = [&](caf::actor dest) -> sampler {
    return [&sys, dest, gap](size_t n) {
      return run_sequential<int32_t>(
          sys, n, gap, [dest](caf::event_based_actor* self, size_t i) {
            return self->request(dest, caf::infinite, static_cast<int32_t>(i));
          });
    };
  };
  std::vector<std::pair<std::string, sampler>> targets{
      {"pool", via_pool(coop)},
      {"pool_dedicated", via_pool(dedicated)},
      {"actor_pool", via_actor(ap)},
      {"bare_actor", via_actor(bare)},
      {"bare_detached_actor", via_actor(bare_detached)},
      {"cv_thread_pool",
       [&cv_pool, gap](size_t n) {
         return run_cv_sequential(cv_pool, n, gap);
       }},
  };
  keep_chosen(targets, [](const auto& t) { return t.first; });
  for (auto& t : targets)
    t.second(std::max<size_t>(per_rep / 10, 10));
  std::vector<std::vector<double>> p50s(targets.size());
  std::vector<std::vector<double>> p99s(targets.size());
  for (size_t rep = 0; rep < reps; ++rep) {
    for (size_t k = 0; k < targets.size(); ++k) {
      auto samples = targets[k].second(per_rep);
      for (size_t i = 0; i < samples.size(); ++i)
        raw.rowf("%s,%zu,%zu,%.0f", targets[k].first.c_str(), rep, i,
                 samples[i]);
      auto mean = mean_of(samples);
      auto p50 = quantile(samples, 0.5);
      auto p99 = quantile(samples, 0.99);
      p50s[k].push_back(p50);
      p99s[k].push_back(p99);
      out.rowf("%s,%zu,%zu,%.0f,%.0f,%.0f", targets[k].first.c_str(), rep,
               samples.size(), p50, p99, mean);
    }
  }
  for (size_t k = 0; k < targets.size(); ++k) {
    auto a = spread_of(p50s[k]);
    auto b = spread_of(p99s[k]);
    std::printf("  %-22s p50 %8.1f us (%.1f-%.1f)   p99 %8.1f us (%.1f-%.1f)\n",
                targets[k].first.c_str(), a.median / 1e3, a.min / 1e3,
                a.max / 1e3, b.median / 1e3, b.min / 1e3, b.max / 1e3);
  }
  for (auto& x : {coop, dedicated, ap, bare, bare_detached})
    caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
}

void run_sweep(const settings& cfg) {
  std::printf("== sweep: trivial jobs, workers x scheduler threads\n");
  auto n = cfg.count(50000, 5000);
  auto reps = cfg.count(3, 1);
  csv_file out{cfg, "sweep.csv",
               "workers,threads_setting,threads,target,rep,jobs,seconds,"
               "jobs_per_s,errors"};
  std::vector<std::optional<size_t>> thread_settings{1, 2, std::nullopt};
  for (size_t workers : {1, 2, 4}) {
    for (auto threads : thread_settings) {
      system_config sys_cfg{threads};
      caf::actor_system sys{sys_cfg};
      auto actual = sys.scheduler().num_workers();
      auto setting =
          threads ? std::to_string(*threads) : std::string{"default"};
      auto coop = spawn_checked(
          pool::spawn_pool(sys, twice, pool::pool_options{}.workers(workers)));
      auto ap = make_actor_pool(sys, workers);
      std::vector<target> targets{pool_target(sys, "pool", coop, window),
                                  actor_target(sys, "actor_pool", ap, window)};
      for (auto& t : targets)
        t.run(std::max<size_t>(n / 10, 1));
      std::vector<std::vector<double>> rates(targets.size());
      for (size_t rep = 0; rep < reps; ++rep) {
        for (size_t k = 0; k < targets.size(); ++k) {
          auto res = targets[k].run(n);
          auto rate = static_cast<double>(n) / res.seconds;
          rates[k].push_back(rate);
          out.rowf("%zu,%s,%zu,%s,%zu,%zu,%.6f,%.1f,%zu", workers,
                   setting.c_str(), actual, targets[k].name.c_str(), rep, n,
                   res.seconds, rate, res.errors);
        }
      }
      auto p = spread_of(rates[0]).median;
      auto a = spread_of(rates[1]).median;
      std::printf("  workers %zu, threads %-7s (%zu): pool %9.0f  actor_pool "
                  "%9.0f  jobs/s  ratio %.2f\n",
                  workers, setting.c_str(), actual, p, a, p / a);
      for (auto& x : {coop, ap})
        caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
    }
  }
}

void run_durable(const settings& cfg) {
  std::printf("== durable: trivial jobs, window %zu, 2 workers, SQLite FULL "
              "and NORMAL vs in memory\n",
              window);
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto n = cfg.count(50000, 5000);
  auto reps = cfg.count(5, 1);
  csv_file out{cfg, "durable.csv", throughput_header};
  char dir_name[] = "/tmp/pool-bench-XXXXXX";
  auto dir = mkdtemp(dir_name);
  if (dir == nullptr) {
    std::perror("mkdtemp");
    return;
  }
  {
    auto opts = pool::pool_options{}.workers(2).log(pool::silent_log_hook());
    auto memory = spawn_checked(pool::spawn_pool(sys, twice, opts));
    auto full = spawn_checked(pool::spawn_pool(
        sys, twice,
        pool::pool_options{opts}.durable(std::string{dir} + "/full.db",
                                         pool::sqlite_sync::full)));
    auto normal = spawn_checked(pool::spawn_pool(
        sys, twice,
        pool::pool_options{opts}.durable(std::string{dir} + "/normal.db",
                                         pool::sqlite_sync::normal)));
    std::vector<target> targets{
        pool_target(sys, "pool_memory", memory, window),
        pool_target(sys, "pool_durable_full", full, window),
        pool_target(sys, "pool_durable_normal", normal, window),
    };
    measure(cfg, out, "durable", targets, n, 1, reps);
    for (auto& x : {memory, full, normal})
      caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

} // namespace bench
