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

} // namespace bench
