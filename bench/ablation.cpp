// What each speed-up is worth: the pool with its defaults, without each
// speed-up or with the alternative, and without any (as the pool was before
// them: no batches, plain sequence, CAF's own scheduler polling), each on a
// fresh actor system: trivial jobs per second, idle latency (cooperative and
// dedicated workers) and the uneven target case (bimodal @ 0.7, pull alone,
// against its ideal replay).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <pool/all.hpp>

#include "workloads.hpp"

namespace bench {

namespace {

struct variant {
  const char* name;
  /// The dispatcher's speed mechanisms (pool_options::dispatch).
  pool::dispatch_tuning tuning;
  /// CAF's own scheduler polling (moderate-poll-attempts 500) instead of
  /// pool::configure's 0
  bool caf_polling;
};

/// The defaults with one mechanism changed by `f`.
template <class F>
pool::dispatch_tuning without(F f) {
  pool::dispatch_tuning x;
  f(x);
  return x;
}

const variant variants[] = {
    {"all (the defaults)", {}, false},
    // The defaults again, on an actor system of their own: the gap between
    // the two rows is the noise of this run.
    {"all again (noise)", {}, false},
    {"without sleeping past the queue",
     without([](auto& x) { x.sleep_without_queue = false; }), false},
    {"without prefetch (nor lookahead)",
     without([](auto& x) { x.prefetch = false; }), false},
    {"without lookahead", without([](auto& x) { x.lookahead = false; }),
     false},
    {"without batching", without([](auto& x) { x.max_batch = 1; }), false},
    {"without grouped adds", without([](auto& x) { x.group_adds = false; }),
     false},
    {"with CAF's default polling", {}, true},
    {"none (before)", without([](auto& x) {
       x.short_cuts(false);
       x.lookahead = x.group_adds = false;
       x.max_batch = 1;
     }),
     true},
};

} // namespace

namespace {

/// One variant's actor system and pools, alive together with the others'
/// so that the trivial and idle measurements can take turns.
struct arm {
  const variant* v;
  std::unique_ptr<system_config> sys_cfg;
  std::unique_ptr<caf::actor_system> sys; // (after sys_cfg: destroyed first)
  pool::pool_options dedicated_opts;
  caf::actor coop;
  caf::actor dedicated;
  std::vector<double> rates;
  std::vector<double> p50s[2]; // cooperative, dedicated
  std::vector<double> p99s[2];
};

} // namespace

namespace {

/// POOL_BENCH_ABLATION=a,b keeps the variants whose names start with one of
/// the prefixes (for deciding on one mechanism with more repetitions).
bool wanted(const variant& v) {
  auto only = env_list("POOL_BENCH_ABLATION");
  std::string name = v.name;
  return !only || std::any_of(only->begin(), only->end(), [&](auto& prefix) {
           return name.compare(0, prefix.size(), prefix) == 0;
         });
}

} // namespace

void run_ablation(const settings& cfg) {
  auto n = cfg.count(50000, 5000);
  auto reps = cfg.count(5, 1);
  if (auto x = std::getenv("POOL_BENCH_ABLATION_REPS"))
    reps = std::max<size_t>(1, std::strtoul(x, nullptr, 10));
  auto per_rep = cfg.count(1000, 200);
  auto uneven_jobs = cfg.count(20000, 1000);
  auto uneven_runs = cfg.count(3, 1);
  constexpr size_t window = 512;
  auto gap = std::chrono::microseconds{200};
  std::printf("== what each speed-up is worth: %zu trivial jobs x %zu, idle "
              "latency %zu x %zu (variants interleaved), bimodal @ 0.7 %zu "
              "jobs x %zu\n",
              n, reps, per_rep, reps, uneven_jobs, uneven_runs);
  csv_file out{cfg, "ablation.csv", "variant,metric,median,min,max"};
  auto row = [&](const variant& v, const char* metric, spread s) {
    out.rowf("%s,%s,%.1f,%.1f,%.1f", v.name, metric, s.median, s.min, s.max);
  };
  // Every repetition, for ratios within a turn (bench/report.py reads the
  // medians above).
  csv_file raw{cfg, "ablation_raw.csv", "variant,metric,rep,value"};
  auto raw_rows = [&](const variant& v, const char* metric,
                      const std::vector<double>& xs) {
    for (size_t i = 0; i < xs.size(); ++i)
      raw.rowf("%s,%s,%zu,%.1f", v.name, metric, i, xs[i]);
  };
  auto submit = [](caf::actor pool) {
    return [pool](caf::event_based_actor* self, size_t i) {
      return self->request(pool, caf::infinite, pool::submit_atom_v,
                           static_cast<int32_t>(i));
    };
  };
  // A variant's scheduler threads may still poll for a while after its
  // turn (CAF's own polling: 500 polls 50 us apart, each sleep longer on a
  // busy machine); the next turn waits that out. (With 30 ms, every row
  // after a polling one measured up to 20% lower.)
  auto settle = [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  };
  std::vector<arm> arms;
  for (auto& v : variants) {
    if (!wanted(v))
      continue;
    arm a;
    a.v = &v;
    a.sys_cfg = std::make_unique<system_config>();
    if (v.caf_polling)
      a.sys_cfg->set("work-stealing.moderate-poll-attempts", size_t{500});
    a.sys = std::make_unique<caf::actor_system>(*a.sys_cfg);
    auto opts = pool::pool_options{}.workers(2).dispatch(v.tuning).log(
        pool::silent_log_hook());
    a.coop = spawn_checked(pool::spawn_pool(*a.sys, twice, opts));
    a.dedicated_opts = opts;
    a.dedicated_opts.kind(pool::worker_kind::dedicated);
    a.dedicated =
        spawn_checked(pool::spawn_pool(*a.sys, twice, a.dedicated_opts));
    // Warm-up, not recorded.
    run_window<int32_t>(*a.sys, n / 10, window, submit(a.coop));
    for (auto& pool : {a.coop, a.dedicated})
      run_sequential<int32_t>(*a.sys, per_rep / 10, gap, submit(pool));
    arms.push_back(std::move(a));
  }
  // Trivial jobs (a window of 512, cooperative workers), then idle latency
  // (one job at a time), each repetition visiting every variant in turn so
  // that drift hits them alike, starting one variant later each time so
  // that none always goes first or follows the same one.
  auto turn = [&arms](size_t rep, size_t j) -> arm& {
    return arms[(rep + j) % arms.size()];
  };
  for (size_t rep = 0; rep < reps; ++rep)
    for (size_t j = 0; j < arms.size(); ++j) {
      auto& a = turn(rep, j);
      settle();
      a.rates.push_back(
          static_cast<double>(n) /
          run_window<int32_t>(*a.sys, n, window, submit(a.coop)).seconds);
    }
  for (size_t rep = 0; rep < reps; ++rep)
    for (size_t j = 0; j < arms.size(); ++j)
      for (int k = 0; k < 2; ++k) {
        auto& a = turn(rep, j);
        settle();
        auto xs = run_sequential<int32_t>(
            *a.sys, per_rep, gap, submit(k == 0 ? a.coop : a.dedicated));
        a.p50s[k].push_back(quantile(xs, 0.5));
        a.p99s[k].push_back(quantile(xs, 0.99));
      }
  for (auto& a : arms) {
    caf::anon_send_exit(a.coop, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(a.dedicated, caf::exit_reason::user_shutdown);
    // No handle left: a detached actor's thread ends only once its actor is
    // gone, and the actor system's destructor waits for that thread.
    a.coop = nullptr;
    a.dedicated = nullptr;
  }
  // The uneven target case, pull alone: one variant at a time, each on its
  // own actor system (the others shut down), as its runs are long.
  for (auto& a : arms) {
    auto& v = *a.v;
    auto rate = spread_of(a.rates);
    row(v, "trivial_jobs_per_s", rate);
    row(v, "idle_p50_ns", spread_of(a.p50s[0]));
    row(v, "idle_p99_ns", spread_of(a.p99s[0]));
    row(v, "idle_dedicated_p50_ns", spread_of(a.p50s[1]));
    row(v, "idle_dedicated_p99_ns", spread_of(a.p99s[1]));
    raw_rows(v, "trivial_jobs_per_s", a.rates);
    raw_rows(v, "idle_p50_ns", a.p50s[0]);
    raw_rows(v, "idle_p99_ns", a.p99s[0]);
    raw_rows(v, "idle_dedicated_p50_ns", a.p50s[1]);
    raw_rows(v, "idle_dedicated_p99_ns", a.p99s[1]);
    auto u = uneven_pull(*a.sys, a.dedicated_opts, uneven_jobs, uneven_runs);
    row(v, "uneven_mean_ns", u.mean);
    row(v, "uneven_p99_ns", u.p99);
    row(v, "uneven_ideal_mean_ns",
        spread{u.ideal_mean, u.ideal_mean, u.ideal_mean});
    row(v, "uneven_ideal_p99_ns",
        spread{u.ideal_p99, u.ideal_p99, u.ideal_p99});
    std::printf("  %-28s trivial %7.0f jobs/s; idle p50/p99 %5.1f/%6.1f us, "
                "dedicated %6.1f/%6.1f us; bimodal @0.7 p99 %5.1f ms = "
                "%.2fx ideal\n",
                v.name, rate.median, spread_of(a.p50s[0]).median / 1e3,
                spread_of(a.p99s[0]).median / 1e3,
                spread_of(a.p50s[1]).median / 1e3,
                spread_of(a.p99s[1]).median / 1e3, u.p99.median / 1e6,
                u.p99.median / u.ideal_p99);
    std::fflush(stdout);
    a.sys.reset(); // Its threads gone before the next variant's runs.
  }
}

} // namespace bench
