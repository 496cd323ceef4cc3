// What each speed-up is worth: the pool with its defaults, without each
// speed-up or with the alternative, and without any (as the pool was before
// them: no batches, plain sequence, CAF's own scheduler polling), each on a
// fresh actor system: trivial jobs per second, idle latency (cooperative and
// dedicated workers) and the uneven target case (bimodal @ 0.7, pull alone, against
// its ideal replay).
#include <cstdio>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <pool/all.hpp>

#include "workloads.hpp"

namespace bench {

namespace {

struct variant {
  const char* name;
  /// pool_options::short_cuts
  bool short_cuts;
  /// pool_options::max_batch: the default, or 1 (no batches)
  bool batching;
  /// pool_options::dedicated_control for the dedicated pool
  bool dedicated_control;
  /// CAF's own scheduler polling (moderate-poll-attempts 500) instead of
  /// pool::configure's 0
  bool caf_polling;
  /// pool_options::hand_ahead
  bool hand_ahead;
};

const variant variants[] = {
    {"all (the defaults)", true, true, false, false, true},
    {"without hand-ahead", true, true, false, false, false},
    {"without batching", true, false, false, false, true},
    {"without short cuts", false, true, false, false, true},
    {"with dedicated control", true, true, true, false, true},
    {"with CAF's default polling", true, true, false, true, true},
    {"CAF's polling + dedicated control", true, true, true, true, true},
    {"none (before)", false, false, false, true, false},
};

} // namespace

void run_ablation(const settings& cfg) {
  auto n = cfg.count(50000, 5000);
  auto reps = cfg.count(3, 1);
  auto per_rep = cfg.count(1000, 200);
  auto uneven_jobs = cfg.count(20000, 1000);
  auto uneven_runs = cfg.count(3, 1);
  constexpr size_t window = 512;
  auto gap = std::chrono::microseconds{200};
  std::printf("== what each speed-up is worth: %zu trivial jobs x %zu, idle "
              "latency %zu x %zu, bimodal @ 0.7 %zu jobs x %zu\n",
              n, reps, per_rep, reps, uneven_jobs, uneven_runs);
  csv_file out{cfg, "ablation.csv", "variant,metric,median,min,max"};
  for (auto& v : variants) {
    system_config sys_cfg;
    if (v.caf_polling)
      sys_cfg.set("work-stealing.moderate-poll-attempts", size_t{500});
    caf::actor_system sys{sys_cfg};
    auto opts = pool::pool_options{}
                    .workers(2)
                    .short_cuts(v.short_cuts)
                    .hand_ahead(v.hand_ahead)
                    .max_batch(v.batching ? pool::pool_options{}.max_batch()
                                          : 1)
                    .log(pool::silent_log_hook());
    auto coop = spawn_checked(pool::spawn_pool(sys, twice, opts));
    auto dedicated_opts = opts;
    dedicated_opts.kind(pool::worker_kind::dedicated)
        .dedicated_control(v.dedicated_control);
    auto dedicated =
        spawn_checked(pool::spawn_pool(sys, twice, dedicated_opts));
    auto row = [&](const char* metric, spread s) {
      out.rowf("%s,%s,%.1f,%.1f,%.1f", v.name, metric, s.median, s.min, s.max);
    };
    // Trivial jobs, a window of 512, cooperative workers.
    auto submit = [](caf::actor pool) {
      return [pool](caf::event_based_actor* self, size_t i) {
        return self->request(pool, caf::infinite, pool::submit_atom_v,
                             static_cast<int32_t>(i));
      };
    };
    run_window<int32_t>(sys, n / 10, window, submit(coop));
    std::vector<double> rates;
    for (size_t rep = 0; rep < reps; ++rep)
      rates.push_back(static_cast<double>(n) /
                      run_window<int32_t>(sys, n, window, submit(coop)).seconds);
    auto rate = spread_of(rates);
    row("trivial_jobs_per_s", rate);
    // Idle latency, one job at a time.
    auto idle = [&](caf::actor pool, const char* p50_name,
                    const char* p99_name) {
      run_sequential<int32_t>(sys, per_rep / 10, gap, submit(pool));
      std::vector<double> p50s, p99s;
      for (size_t rep = 0; rep < reps; ++rep) {
        auto xs = run_sequential<int32_t>(sys, per_rep, gap, submit(pool));
        p50s.push_back(quantile(xs, 0.5));
        p99s.push_back(quantile(xs, 0.99));
      }
      row(p50_name, spread_of(p50s));
      row(p99_name, spread_of(p99s));
      return std::make_pair(spread_of(p50s).median, spread_of(p99s).median);
    };
    auto [coop50, coop99] = idle(coop, "idle_p50_ns", "idle_p99_ns");
    auto [ded50, ded99] =
        idle(dedicated, "idle_dedicated_p50_ns", "idle_dedicated_p99_ns");
    caf::anon_send_exit(coop, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(dedicated, caf::exit_reason::user_shutdown);
    // The uneven target case, pull alone.
    auto u = uneven_pull(sys, dedicated_opts, uneven_jobs, uneven_runs);
    row("uneven_mean_ns", u.mean);
    row("uneven_p99_ns", u.p99);
    row("uneven_ideal_mean_ns", spread{u.ideal_mean, u.ideal_mean, u.ideal_mean});
    row("uneven_ideal_p99_ns", spread{u.ideal_p99, u.ideal_p99, u.ideal_p99});
    std::printf("  %-28s trivial %7.0f jobs/s; idle p50/p99 %5.1f/%6.1f us, "
                "dedicated %6.1f/%6.1f us; bimodal @0.7 p99 %5.1f ms = "
                "%.2fx ideal\n",
                v.name, rate.median, coop50 / 1e3, coop99 / 1e3, ded50 / 1e3,
                ded99 / 1e3, u.p99.median / 1e6,
                u.p99.median / u.ideal_p99);
    std::fflush(stdout);
  }
}

} // namespace bench
