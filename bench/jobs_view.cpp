// The jobs view under load (issue 45's targets), printed, never asserted:
//
// 1. A pool holding 1,000,000 waiting operations (paused): how long the
//    first page takes (every state; waiting only; a state none has, which
//    looks at `job_scan_budget` operations and stops), medians of 11.
// 2. Trivial jobs through a pool with and without a client paging through
//    its jobs every 100 ms (10x the once a second), alternating
//    rounds: the throughput ratio, median and range.
//
//   jobs_view [waiting ops, default 1000000] [rounds, default 5]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <caf/all.hpp>
#include <pool/all.hpp>
#include <pool/jobs.hpp>

#include "bench_util.hpp"

using namespace std::chrono_literals;

namespace {

double page_ms(caf::scoped_actor& self, const caf::actor& p,
               pool::job_filter f, size_t* jobs = nullptr) {
  auto t0 = bench::clock_type::now();
  self->request(p, 60s, pool::list_jobs_v, f)
      .receive(
          [&](pool::job_page& pg) {
            if (jobs)
              *jobs = pg.jobs.size();
          },
          [](caf::error& err) {
            std::fprintf(stderr, "list_jobs: %s\n",
                         pool::describe(err).c_str());
            std::exit(1);
          });
  return bench::seconds_between(t0, bench::clock_type::now()) * 1e3;
}

} // namespace

int main(int argc, char** argv) {
  size_t held = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1'000'000;
  size_t rounds = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 5;
  bench::system_config cfg;
  pool::configure(cfg);
  caf::actor_system sys{cfg};
  {
    auto p = bench::spawn_checked(pool::spawn_pool(
        sys, bench::twice, pool::pool_options{}.workers(1).log(
                               pool::silent_log_hook())));
    caf::scoped_actor self{sys};
    self->request(p, 10s, pool::pause_atom_v).receive([] {}, [](caf::error&) {});
    for (size_t i = 0; i < held; ++i)
      self->send(p, pool::enqueue_atom_v, static_cast<int32_t>(i));
    // Every submit answered with its id: the pool holds them all.
    for (size_t i = 0; i < held; ++i)
      self->receive([](uint64_t) {}, [](caf::error&) {});
    std::vector<double> all, waiting, none;
    size_t n_all = 0, n_none = 0;
    for (int i = 0; i < 11; ++i) {
      all.push_back(page_ms(self, p, pool::job_filter{}, &n_all));
      pool::job_filter w;
      w.state = pool::job_state::waiting;
      waiting.push_back(page_ms(self, p, w));
      pool::job_filter r;
      r.state = pool::job_state::running;
      none.push_back(page_ms(self, p, r, &n_none));
    }
    auto a = bench::spread_of(all), b = bench::spread_of(waiting),
         c = bench::spread_of(none);
    std::printf("jobs view, %zu waiting operations (medians of 11, ms):\n"
                "  first page, every state (%zu jobs)  %.3f (%.3f-%.3f)\n"
                "  first page, waiting                 %.3f (%.3f-%.3f)\n"
                "  a state none has (%zu jobs, scans %llu) %.3f (%.3f-%.3f)\n",
                held, n_all, a.median, a.min, a.max, b.median, b.min, b.max,
                n_none, static_cast<unsigned long long>(pool::job_scan_budget),
                c.median, c.min, c.max);
    caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
  }
  // Throughput with and without a client paging every 100 ms.
  std::vector<double> ratios;
  for (size_t r = 0; r < rounds; ++r) {
    double rate[2] = {0, 0};
    for (int paging = 0; paging < 2; ++paging) {
      auto p = bench::spawn_checked(pool::spawn_pool(
          sys, bench::twice, pool::pool_options{}.workers(2).log(
                                 pool::silent_log_hook())));
      std::atomic<bool> stop{false};
      std::thread pager;
      if (paging)
        pager = std::thread{[&] {
          caf::scoped_actor self{sys};
          while (!stop) {
            pool::job_filter f;
            page_ms(self, p, f);
            std::this_thread::sleep_for(100ms);
          }
        }};
      size_t n = 200'000;
      auto res = bench::drive_threads(sys, p, n, 512, 1, bench::send_submit);
      stop = true;
      if (pager.joinable())
        pager.join();
      rate[paging] = static_cast<double>(n) / res.seconds;
      caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
    }
    ratios.push_back(rate[1] / rate[0]);
    std::printf("  round %zu: %.0f ops/s without, %.0f with a pager: %.3f\n",
                r + 1, rate[0], rate[1], rate[1] / rate[0]);
  }
  auto s = bench::spread_of(ratios);
  std::printf("trivial throughput with a pager / without: %.3f (%.3f-%.3f), "
              "%zu rounds\n",
              s.median, s.min, s.max, rounds);
}
