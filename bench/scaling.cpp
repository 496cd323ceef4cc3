// Scaling with workers: trivial jobs and 20 us computing jobs on 1, 2, 4,
// ... workers up to the cores, every system side by side (the pool,
// cooperative and dedicated, caf::actor_pool round-robin, the mutex + cv
// pool), driven by plain threads that `send` and count replies
// (`drive_threads`), so that the driver is not the bottleneck: its own
// ceiling, against one bare echo actor, is measured in the same run. Also
// the shepherd's ceiling: trivial jobs from several caller threads.

#include <algorithm>
#include <cstdio>
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

const char* header = "job_us,workers,system,rep,jobs,seconds,jobs_per_s,"
                     "ideal_jobs_per_s,errors";

/// `alternate` with a warm-up of n / 10, keeping each target's rate per
/// round; `row(k, rep, seconds, errors)` writes a row per run.
template <class Row>
std::vector<std::vector<double>> rates_of(std::vector<target>& targets,
                                          size_t n, size_t reps, Row row) {
  std::vector<std::vector<double>> rates(targets.size());
  alternate(targets, std::max<size_t>(n / 10, 1), n, reps,
            [&](size_t k, size_t rep, const window_result& res) {
              rates[k].push_back(static_cast<double>(n) / res.seconds);
              row(k, rep, res.seconds, res.errors);
            });
  return rates;
}

/// 1, 2, 4, ... up to `cores`, and `cores - 1`.
std::vector<size_t> worker_counts(size_t cores) {
  std::vector<size_t> result;
  for (size_t n = 1; n <= cores; n *= 2)
    result.push_back(n);
  if (cores > 1)
    result.push_back(cores - 1);
  result.push_back(cores);
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

/// Runs every system with `workers` workers on jobs of `job_us` (0: the
/// trivial job), alternating, and prints the medians; with jobs that take
/// time also as shares of the ideal rate.
void measure_point(const settings& cfg, csv_file& out, caf::actor_system& sys,
                   double job_us, size_t workers, double steps, size_t reps) {
  auto iters = static_cast<uint64_t>(job_us * steps);
  auto ideal = job_us > 0 ? static_cast<double>(workers) * 1e6 / job_us : 0.0;
  size_t n = job_us > 0 ? std::max<size_t>(
                              500, static_cast<size_t>(
                                       ideal * (cfg.quick ? 0.05 : 0.3)))
                        : cfg.count(100000, 10000);
  auto opts = pool::pool_options{}.workers(workers);
  auto coop = spawn_checked(pool::spawn_pool(sys, burner{iters}, opts));
  auto dedicated = spawn_checked(pool::spawn_pool(
      sys, burner{iters},
      pool::pool_options{opts}.kind(pool::worker_kind::dedicated)));
  auto ap = caf::actor_pool::make(
      sys.dummy_execution_unit(), workers,
      [&sys, iters] { return sys.spawn(burner_actor, iters); },
      caf::actor_pool::round_robin());
  cv_thread_pool cv{workers};
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
  keep_chosen(systems, [](const target& t) { return t.name; });
  auto rates = rates_of(systems, n, reps, [&](size_t k, size_t rep,
                                                         double seconds,
                                                         size_t errors) {
    out.rowf("%.0f,%zu,%s,%zu,%zu,%.6f,%.1f,%.1f,%zu", job_us, workers,
             systems[k].name.c_str(), rep, n, seconds, n / seconds, ideal,
             errors);
  });
  std::printf("  %4.0f us x %2zu:", job_us, workers);
  size_t ap_index = systems.size();
  for (size_t k = 0; k < systems.size(); ++k)
    if (systems[k].name == "actor_pool")
      ap_index = k;
  for (size_t k = 0; k < systems.size(); ++k) {
    auto s = spread_of(rates[k]);
    if (ideal > 0)
      std::printf("  %s %.2f (%.2f-%.2f)", systems[k].name.c_str(),
                  s.median / ideal, s.min / ideal, s.max / ideal);
    else
      std::printf("  %s %.0f/s", systems[k].name.c_str(), s.median);
    if (ap_index < systems.size() && k != ap_index &&
        systems[k].name.rfind("pool", 0) == 0) {
      auto r = ratio_spread(rates[k], rates[ap_index]);
      std::printf(" [%.2fx ap]", r.median);
    }
  }
  std::printf("\n");
  std::fflush(stdout);
  for (auto& x : {coop, dedicated, ap})
    caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
}

/// The driver's own ceiling: `callers` threads against one bare actor that
/// answers at once. Every system is measured with the same driver, so a
/// system far below this figure is not held back by it.
void measure_driver(const settings& cfg, csv_file& out, caf::actor_system& sys,
                    size_t callers, size_t reps) {
  auto n = cfg.count(200000, 20000);
  auto echo = sys.spawn([] {
    return caf::behavior{[](int32_t x) { return x; }};
  });
  std::vector<target> one{actor_target(sys, "bare_echo", echo, window,
                                       callers)};
  auto rates = rates_of(one, n, reps,
                               [&](size_t, size_t rep, double seconds,
                                   size_t errors) {
                                 out.rowf("%zu,%zu,%zu,%.6f,%.1f,%zu", callers,
                                          rep, n, seconds, n / seconds,
                                          errors);
                               });
  auto s = spread_of(rates[0]);
  std::printf("  driver ceiling, %zu caller thread(s) -> one bare echo actor: "
              "%.0f/s (%.0f-%.0f)\n",
              callers, s.median, s.min, s.max);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
}

/// The shepherd's ceiling: trivial jobs from `callers` threads on
/// `workers` cooperative workers.
void measure_ceiling(const settings& cfg, csv_file& out,
                     caf::actor_system& sys, size_t workers, size_t callers,
                     size_t reps) {
  auto n = cfg.count(200000, 20000);
  auto coop = spawn_checked(pool::spawn_pool(
      sys, burner{0}, pool::pool_options{}.workers(workers)));
  auto ap = caf::actor_pool::make(
      sys.dummy_execution_unit(), workers,
      [&sys] { return sys.spawn(burner_actor, uint64_t{0}); },
      caf::actor_pool::round_robin());
  std::vector<target> systems{
      pool_target(sys, "pool", coop, window * callers, callers),
      actor_target(sys, "actor_pool", ap, window * callers, callers)};
  auto rates = rates_of(systems, n, reps,
                               [&](size_t k, size_t rep, double seconds,
                                   size_t errors) {
                                 out.rowf("%s,%zu,%zu,%zu,%zu,%.6f,%.1f,%zu",
                                          systems[k].name.c_str(), workers,
                                          callers, rep, n, seconds,
                                          n / seconds, errors);
                               });
  auto pool_rate = spread_of(rates[0]);
  auto ap_rate = spread_of(rates[1]);
  std::printf("  shepherd ceiling (trivial, %zu workers, %zu callers): pool "
              "%.0f/s (%.0f-%.0f), actor_pool %.0f/s\n",
              workers, callers, pool_rate.median, pool_rate.min,
              pool_rate.max, ap_rate.median);
  for (auto& x : {coop, ap})
    caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
}

} // namespace

void run_scaling(const settings& cfg) {
  auto cores = std::max<size_t>(1, std::thread::hardware_concurrency());
  auto steps = steps_per_us();
  std::printf("== scaling: trivial and 20 us jobs by workers, window %zu, "
              "%zu cores, driver: caller threads with send + receive\n",
              window, cores);
  system_config sys_cfg; // pool::configure, as shipped
  caf::actor_system sys{sys_cfg};
  auto reps = cfg.count(3, 1);
  csv_file driver{cfg, "scaling_driver.csv",
                  "callers,rep,jobs,seconds,jobs_per_s,errors"};
  auto callers = std::min<size_t>(4, cores);
  measure_driver(cfg, driver, sys, 1, reps);
  if (callers > 1)
    measure_driver(cfg, driver, sys, callers, reps);
  csv_file out{cfg, "scaling.csv", header};
  auto only = env_list("POOL_BENCH_SCALING"); // e.g. 0x2,20x15
  for (auto job_us : {0.0, 20.0})
    for (auto workers : worker_counts(cores)) {
      auto key = std::to_string(static_cast<int>(job_us)) + "x" +
                 std::to_string(workers);
      if (only && std::find(only->begin(), only->end(), key) == only->end())
        continue;
      measure_point(cfg, out, sys, job_us, workers, steps, reps);
    }
  csv_file ceiling{cfg, "scaling_ceiling.csv",
                   "system,workers,callers,rep,jobs,seconds,jobs_per_s,"
                   "errors"};
  measure_ceiling(cfg, ceiling, sys, std::max<size_t>(1, cores - 1), callers,
                  reps);
}

} // namespace bench
