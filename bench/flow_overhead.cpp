// What flow control costs a busy pool (issue 25's target: at most 10 % of
// throughput on trivial jobs): trivial jobs, workers = cores, a window of
// 512, three identical pools in one actor system, alternating: one
// without flow control; one with a start-rate limit that never binds
// (10,000,000 per second: the gate checks and counts every start); one
// with the same limit that was paused and resumed before the run (the
// pause switch's path). Per round: limited / plain, so that drifts of the
// machine cancel.

#include <cstdio>
#include <thread>

#include <caf/all.hpp>
#include <pool/all.hpp>

#include "workloads.hpp"

namespace bench {

void run_flow(const settings& cfg) {
  std::printf("== flow: the cost of flow control (trivial jobs)\n");
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto workers = std::max(1u, std::thread::hardware_concurrency());
  auto opts = pool::pool_options{}.workers(workers);
  auto limited_opts = opts;
  limited_opts.rate_limit(1'000'000, std::chrono::milliseconds(100));
  auto plain = spawn_checked(pool::spawn_pool(sys, twice, opts));
  auto limited = spawn_checked(pool::spawn_pool(sys, twice, limited_opts));
  auto resumed = spawn_checked(pool::spawn_pool(sys, twice, limited_opts));
  {
    caf::scoped_actor self{sys};
    for (auto atom : {caf::make_message(pool::pause_atom_v),
                      caf::make_message(pool::resume_atom_v)})
      self->request(resumed, std::chrono::seconds(10), atom)
          .receive([] {}, [](caf::error&) {});
  }
  auto n = cfg.count(1'500'000, 20'000);
  auto reps = cfg.count(7, 1);
  constexpr size_t window = 512;
  std::vector<target> targets{
      pool_target(sys, "plain", plain, window),
      pool_target(sys, "rate_limit", limited, window),
      pool_target(sys, "resumed", resumed, window),
  };
  csv_file out{cfg, "flow.csv", "target,rep,jobs,seconds,ops_per_s"};
  auto rates = alternate_rates(targets, n, reps, out);
  auto p = spread_of(rates[0]);
  std::printf("  plain %.0f ops/s (%.0f-%.0f)\n", p.median, p.min, p.max);
  for (size_t k = 1; k < targets.size(); ++k) {
    auto s = spread_of(rates[k]);
    auto r = ratio_spread(rates[k], rates[0]);
    std::printf("  %s %.0f ops/s (%.0f-%.0f); %s/plain %.3f (%.3f-%.3f) "
                "over %zu rounds\n",
                targets[k].name.c_str(), s.median, s.min, s.max,
                targets[k].name.c_str(), r.median, r.min, r.max, reps);
  }
  std::fflush(stdout);
  for (auto& x : {plain, limited, resumed})
    caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
}

namespace {

/// Submits `(sub_with, concurrency key of 16 tenants, i)` to `pool`,
/// keeping `window` requests outstanding.
target keyed_target(caf::actor_system& sys, std::string name, caf::actor pool,
                    size_t window) {
  auto keys = std::make_shared<std::vector<pool::job_options>>();
  for (int k = 0; k < 16; ++k)
    keys->push_back(
        pool::job_options{}.concurrency_key("tenant-" + std::to_string(k)));
  return {std::move(name), [&sys, pool, window, keys](size_t n) {
            return run_window<int32_t>(
                sys, n, window,
                [pool, keys](caf::event_based_actor* self, size_t i) {
                  return self->request(pool, caf::infinite,
                                       pool::submit_with_atom_v,
                                       (*keys)[i % keys->size()],
                                       static_cast<int32_t>(i));
                });
          }};
}

} // namespace

// What per-key limits cost a busy pool (issue 25's target: at most 10 %):
// trivial jobs, workers = cores, a window of 512, submits spread over 16
// keys. Alternating per round: plain submits to a pool without limits
// (the baseline); the same keyed submits to a pool without limits (what
// the options message costs); to a pool whose every key has a
// concurrency limit that never binds (k = 1,000: the key gate checks and
// counts every start, and the shortcuts are off); and to one whose every
// key has a start rate that never binds (1,000,000 per 100 ms: batches of
// one).
void run_keys(const settings& cfg) {
  std::printf("== keys: the cost of per-key limits (trivial jobs)\n");
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto workers = std::max(1u, std::thread::hardware_concurrency());
  auto opts = pool::pool_options{}.workers(workers);
  auto conc_opts = opts;
  conc_opts.key_flow(
      pool::key_flow_options{}.every_key(pool::key_limit{1000, std::nullopt}));
  auto rate_opts = opts;
  rate_opts.key_flow(pool::key_flow_options{}.every_key(pool::key_limit{
      std::nullopt,
      pool::start_rate{1'000'000, std::chrono::milliseconds(100)}}));
  auto plain = spawn_checked(pool::spawn_pool(sys, twice, opts));
  auto keyed = spawn_checked(pool::spawn_pool(sys, twice, opts));
  auto conc = spawn_checked(pool::spawn_pool(sys, twice, conc_opts));
  auto rate = spawn_checked(pool::spawn_pool(sys, twice, rate_opts));
  auto n = cfg.count(1'000'000, 20'000);
  auto reps = cfg.count(7, 1);
  constexpr size_t window = 512;
  std::vector<target> targets{
      pool_target(sys, "plain", plain, window),
      keyed_target(sys, "keyed_no_limit", keyed, window),
      keyed_target(sys, "key_concurrency", conc, window),
      keyed_target(sys, "key_rate", rate, window),
  };
  csv_file out{cfg, "keys.csv", "target,rep,jobs,seconds,ops_per_s"};
  auto rates = alternate_rates(targets, n, reps, out);
  auto p = spread_of(rates[0]);
  std::printf("  plain %.0f ops/s (%.0f-%.0f)\n", p.median, p.min, p.max);
  for (size_t k = 1; k < targets.size(); ++k) {
    auto s = spread_of(rates[k]);
    auto r = ratio_spread(rates[k], rates[0]);
    auto rk = ratio_spread(rates[k], rates[1]);
    std::printf("  %s %.0f ops/s (%.0f-%.0f); /plain %.3f (%.3f-%.3f); "
                "/keyed_no_limit %.3f (%.3f-%.3f) over %zu rounds\n",
                targets[k].name.c_str(), s.median, s.min, s.max, r.median,
                r.min, r.max, rk.median, rk.min, rk.max, reps);
  }
  std::fflush(stdout);
  for (auto& x : {plain, keyed, conc, rate})
    caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
}

} // namespace bench
