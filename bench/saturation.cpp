// Saturated CPU-bound work: jobs that compute (not sleep) for 20 us,
// 200 us and 2 ms, 512 requests outstanding from one requesting actor, on
// workers = cores and cores - 1. The pool as shipped (pool::configure,
// default options; cooperative and dedicated) against caf::actor_pool
// round-robin, the mutex + cv thread pool and the ideal (workers / job
// time). Also the shepherd's own ceiling: operations per second with jobs
// that take no time, and what an idle pool costs: CPU over 10 s with the
// pool spawned and no work.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_pool.hpp>
#include <caf/all.hpp>
#include <pool/all.hpp>

#include "burn.hpp"
#include "workloads.hpp"

namespace bench {

namespace {

constexpr size_t window = 512;

/// CPU time this process used so far, in seconds.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct point {
  double job_us;
  size_t workers;
};

const char* header = "job_us,workers,system,rep,jobs,seconds,jobs_per_s,"
                     "ideal_jobs_per_s,share_of_ideal,errors";

/// Runs every system at `p`, alternating, `reps` times each after a
/// warm-up; prints the medians.
void measure_point(const settings& cfg, csv_file& out, caf::actor_system& sys,
                   point p, double steps, size_t reps) {
  auto iters = static_cast<uint64_t>(p.job_us * steps);
  burner job{iters};
  auto ideal = p.workers * 1e6 / p.job_us;
  // About 0.4 s per run at the ideal rate (0.05 s quick), at least 200 jobs.
  auto n = std::max<size_t>(200, static_cast<size_t>(
                                     ideal * (cfg.quick ? 0.05 : 0.4)));
  auto opts = pool::pool_options{}.workers(p.workers);
  if (auto x = std::getenv("POOL_BENCH_BATCH_US")) // (trying a change)
    opts.batch_time(std::chrono::microseconds{std::stoul(x)});
  if (auto x = std::getenv("POOL_BENCH_MAX_BATCH"))
    opts.max_batch(std::stoul(x));
  auto coop = spawn_checked(pool::spawn_pool(sys, job, opts));
  auto dedicated = spawn_checked(pool::spawn_pool(
      sys, job, pool::pool_options{opts}.kind(pool::worker_kind::dedicated)));
  auto ap = caf::actor_pool::make(
      sys.dummy_execution_unit(), p.workers,
      [&sys, iters] { return sys.spawn(burner_actor, iters); },
      caf::actor_pool::round_robin());
  cv_thread_pool cv{p.workers};
  std::vector<target> systems{
      pool_target(sys, "pool", coop, window),
      pool_target(sys, "pool_dedicated", dedicated, window),
      actor_target(sys, "actor_pool", ap, window),
      {"cv_thread_pool",
       [&cv, iters](size_t jobs) {
         return window_result{
             run_cv_window(cv, jobs, window,
                           [iters](int32_t x) { return burn(iters, x); }),
             0};
       }},
  };
  // Each run's process CPU time, to tell dead time (CPU short of the
  // workers' share) from overhead (CPU spent, jobs not done).
  keep_chosen(systems, [](const target& t) { return t.name; });
  std::vector<std::vector<double>> shares(systems.size());
  std::vector<std::vector<double>> cpus(systems.size());
  for (size_t k = 0; k < systems.size(); ++k)
    systems[k].run = [run = systems[k].run, &cpu = cpus[k]](size_t jobs) {
      auto cpu0 = process_cpu_seconds();
      auto t0 = clock_type::now();
      auto res = run(jobs);
      cpu.push_back((process_cpu_seconds() - cpu0) /
                    seconds_between(t0, clock_type::now()));
      return res;
    };
  alternate(systems, std::max<size_t>(n / 10, 20), n, reps,
            [&](size_t k, size_t rep, const window_result& res) {
              auto rate = n / res.seconds;
              shares[k].push_back(rate / ideal);
              out.rowf("%.0f,%zu,%s,%zu,%zu,%.6f,%.1f,%.1f,%.4f,%zu",
                       p.job_us, p.workers, systems[k].name.c_str(), rep, n,
                       res.seconds, rate, ideal, rate / ideal, res.errors);
            });
  std::printf("  %5.0f us x %zu workers:", p.job_us, p.workers);
  for (size_t k = 0; k < systems.size(); ++k) {
    auto s = spread_of(shares[k]);
    std::printf("  %s %.2f (%.2f-%.2f) cpu %.2f", systems[k].name.c_str(),
                s.median, s.min, s.max, spread_of(cpus[k]).median);
  }
  std::printf("\n");
  std::fflush(stdout);
  for (auto& x : {coop, dedicated, ap})
    caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
}

/// Jobs that take no time on workers = cores: operations per second the
/// shepherd dispatches while it shares the cores with its workers and the
/// requester (a lower bound on what it can dispatch alone).
void measure_ceiling(const settings& cfg, csv_file& out,
                     caf::actor_system& sys, size_t workers, size_t reps) {
  auto n = cfg.count(200000, 20000);
  auto coop = spawn_checked(pool::spawn_pool(
      sys, burner{0}, pool::pool_options{}.workers(workers)));
  auto run = pool_target(sys, "pool", coop, window);
  run.run(n / 10);
  std::vector<double> rates;
  for (size_t rep = 0; rep < reps; ++rep) {
    auto res = run.run(n);
    rates.push_back(n / res.seconds);
    out.rowf("%zu,%zu,%zu,%.6f,%.1f", workers, rep, n, res.seconds,
             rates.back());
  }
  auto s = spread_of(rates);
  std::printf("  shepherd ceiling (0 us jobs, %zu workers): %.0f ops/s "
              "(%.0f-%.0f); one shepherd saturates ~%.0f cores of 20 us "
              "jobs, ~%.0f of 200 us jobs\n",
              workers, s.median, s.min, s.max, s.median * 20e-6,
              s.median * 200e-6);
  caf::anon_send_exit(coop, caf::exit_reason::user_shutdown);
}

/// Share of one core the process burns over `idle` with `what` spawned
/// in a fresh actor system (as shipped) that got a few jobs first and then
/// none; "system" is the actor system alone, the baseline.
void measure_idle(const settings& cfg, csv_file& out, const char* what,
                  size_t workers) {
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  caf::actor subject;
  std::string name = what;
  if (name == "pool" || name == "pool_dedicated")
    subject = spawn_checked(pool::spawn_pool(
        sys, burner{0},
        pool::pool_options{}.workers(workers).kind(
            name == "pool" ? pool::worker_kind::cooperative
                           : pool::worker_kind::dedicated)));
  else if (name == "actor_pool")
    subject = caf::actor_pool::make(
        sys.dummy_execution_unit(), workers,
        [&sys] { return sys.spawn(burner_actor, uint64_t{0}); },
        caf::actor_pool::round_robin());
  if (name == "actor_pool")
    actor_target(sys, name, subject, window).run(100);
  else if (subject)
    pool_target(sys, name, subject, window).run(100);
  std::this_thread::sleep_for(std::chrono::milliseconds{500}); // settle
  auto idle = std::chrono::seconds{cfg.quick ? 1 : 10};
  auto cpu0 = process_cpu_seconds();
  auto t0 = clock_type::now();
  std::this_thread::sleep_for(idle);
  auto seconds = seconds_between(t0, clock_type::now());
  auto share = (process_cpu_seconds() - cpu0) / seconds;
  out.rowf("%s,%zu,%.3f,%.5f", what, workers, seconds, share);
  std::printf("  idle %s (%zu workers): %.2f%% of one core over %.0f s\n",
              what, workers, share * 100, seconds);
  std::fflush(stdout);
  if (subject)
    caf::anon_send_exit(subject, caf::exit_reason::user_shutdown);
}

} // namespace

void run_saturation(const settings& cfg) {
  auto cores = std::max(1u, std::thread::hardware_concurrency());
  auto steps = steps_per_us();
  std::printf("== saturation: computing jobs, window %zu, %u cores, %.0f "
              "steps/us\n",
              window, cores, steps);
  system_config sys_cfg; // pool::configure, as shipped
  caf::actor_system sys{sys_cfg};
  auto reps = cfg.count(5, 1);
  csv_file out{cfg, "saturation.csv", header};
  csv_file calib{cfg, "saturation_calibration.csv", "steps_per_us"};
  calib.rowf("%.3f", steps);
  std::vector<size_t> worker_counts{cores};
  if (cores > 1)
    worker_counts.push_back(cores - 1);
  // POOL_BENCH_SATURATION=20x2,200x1 measures only those points (job
  // microseconds x workers) and skips the ceiling and idle CPU.
  auto only = env_list("POOL_BENCH_SATURATION");
  auto wanted = [&only](double job_us, size_t workers) {
    auto key = std::to_string(static_cast<int>(job_us)) + "x" +
               std::to_string(workers);
    return !only || std::find(only->begin(), only->end(), key) != only->end();
  };
  for (auto job_us : {20.0, 200.0, 2000.0})
    for (auto workers : worker_counts)
      if (wanted(job_us, workers))
        measure_point(cfg, out, sys, {job_us, workers}, steps, reps);
  if (only)
    return;
  csv_file ceiling{cfg, "saturation_ceiling.csv",
                   "workers,rep,jobs,seconds,jobs_per_s"};
  measure_ceiling(cfg, ceiling, sys, cores, reps);
  csv_file idle{cfg, "saturation_idle.csv",
                "system,workers,seconds,cpu_share_of_one_core"};
  for (auto what : {"system", "pool", "pool_dedicated", "actor_pool"})
    measure_idle(cfg, idle, what, cores);
}

} // namespace bench
