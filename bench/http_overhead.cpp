// What the operators' HTTP endpoint costs a busy pool: trivial jobs (the
// case where any per-operation cost shows most), workers = cores, a window
// of 512, on two identical pools in one actor system, alternating: one
// plain, one served by pool::serve_http (sampled every second) while a
// client scrapes /metrics and /api/stats every second. Runs last about
// 3 s each so that every run holds scrapes. The scraper pauses during the
// plain pool's runs.

#include <atomic>
#include <cstdio>
#include <thread>

#include <caf/all.hpp>
#include <httplib.h>
#include <pool/all.hpp>
#include <pool/http.hpp>

#include "workloads.hpp"

namespace bench {

void run_http(const settings& cfg) {
  std::printf("== http: the HTTP endpoint's cost (trivial jobs)\n");
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto workers = std::max(1u, std::thread::hardware_concurrency());
  auto opts = pool::pool_options{}.workers(workers);
  auto plain = spawn_checked(pool::spawn_pool(sys, twice, opts));
  auto served = spawn_checked(pool::spawn_pool(sys, twice, opts));
  auto ep = pool::serve_http(sys, {{"served", served}}, pool::http_options{});
  if (!ep) {
    std::printf("  cannot serve: %s\n", pool::describe(ep.error()).c_str());
    return;
  }
  std::atomic<bool> scraping{false};
  std::atomic<bool> done{false};
  std::atomic<size_t> scrapes{0};
  std::thread scraper{[&] {
    httplib::Client cli{"127.0.0.1", (*ep)->port()};
    auto next = clock_type::now();
    while (!done) {
      if (scraping && clock_type::now() >= next) {
        auto a = cli.Get("/metrics");
        auto b = cli.Get("/api/stats");
        if (a && b && a->status == 200 && b->status == 200)
          ++scrapes;
        next = clock_type::now() + std::chrono::seconds(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }};
  auto n = cfg.count(1'500'000, 20'000);
  auto reps = cfg.count(7, 1);
  constexpr size_t window = 512;
  auto served_target = pool_target(sys, "served", served, window);
  std::vector<target> targets{
      pool_target(sys, "plain", plain, window),
      {"served",
       [&](size_t jobs) {
         scraping = true;
         auto res = served_target.run(jobs);
         scraping = false;
         return res;
       }},
  };
  csv_file out{cfg, "http.csv", "target,rep,jobs,seconds,ops_per_s"};
  auto rates = alternate_rates(targets, n, reps, out);
  auto p = spread_of(rates[0]);
  auto s = spread_of(rates[1]);
  auto r = ratio_spread(rates[1], rates[0]); // served / plain
  std::printf("  plain %.0f ops/s (%.0f-%.0f), served %.0f ops/s (%.0f-%.0f); "
              "served/plain %.3f (%.3f-%.3f) over %zu rounds, %zu scrapes\n",
              p.median, p.min, p.max, s.median, s.min, s.max, r.median, r.min,
              r.max, reps, scrapes.load());
  std::fflush(stdout);
  done = true;
  scraper.join();
  ep->reset();
  for (auto& x : {plain, served})
    caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
}

} // namespace bench
