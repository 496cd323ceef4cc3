// Runs N trivial jobs (x -> 2x) through one system and exits: the program
// bench/instructions runs under callgrind at two job counts, so that the
// slope between them is the instructions one job costs (every thread
// counted, set-up and shut-down cancelled out).
//
//   pool_per_job SYSTEM JOBS [WORKERS] [CALLERS] [WINDOW]
//   SYSTEM: pool | pool_dedicated | actor_pool | bare_actor
//   WINDOW: requests outstanding (default 512; 1 = one job at a time, so
//   the pool is idle when each arrives)

#include <cstdio>
#include <cstdlib>
#include <string>

#include <caf/actor_pool.hpp>
#include <caf/all.hpp>
#include <pool/all.hpp>

#include "bench_util.hpp"

namespace {

caf::behavior doubler() {
  return {[](int32_t x) { return bench::twice(x); }};
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: pool_per_job pool|pool_dedicated|actor_pool|"
                         "bare_actor JOBS [WORKERS] [CALLERS] [WINDOW]\n");
    return 2;
  }
  std::string system = argv[1];
  auto jobs = std::strtoul(argv[2], nullptr, 10);
  auto workers = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 2ul;
  auto callers = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 1ul;
  auto window = argc > 5 ? std::strtoul(argv[5], nullptr, 10) : 512ul;
  if (jobs == 0 || workers == 0 || callers == 0 || window == 0) {
    std::fprintf(stderr,
                 "JOBS, WORKERS, CALLERS and WINDOW must be positive\n");
    return 2;
  }
  bench::system_config cfg;
  caf::actor_system sys{cfg};
  caf::actor dest;
  bool submit = true;
  if (system == "pool" || system == "pool_dedicated") {
    auto opts = pool::pool_options{}.workers(workers);
    if (system == "pool_dedicated")
      opts.kind(pool::worker_kind::dedicated);
    dest = bench::spawn_checked(pool::spawn_pool(sys, bench::twice, opts));
  } else if (system == "actor_pool") {
    dest = caf::actor_pool::make(
        sys.dummy_execution_unit(), workers,
        [&sys] { return sys.spawn(doubler); }, caf::actor_pool::round_robin());
    submit = false;
  } else if (system == "bare_actor") {
    dest = sys.spawn(doubler);
    submit = false;
  } else {
    std::fprintf(stderr, "unknown system %s\n", system.c_str());
    return 2;
  }
  auto res = bench::drive_threads(sys, dest, jobs, window, callers,
                                  submit ? bench::send_submit
                                         : bench::send_plain);
  std::printf("%s: %lu jobs in %.3f s, %zu errors\n", system.c_str(), jobs,
              res.seconds, res.errors);
  if (submit && std::getenv("POOL_PER_JOB_STATS") != nullptr) {
    // How the jobs went out: batches, sent ahead, handed out directly.
    caf::scoped_actor self{sys};
    self->request(dest, caf::infinite, pool::pool_stats_atom_v)
        .receive(
            [](const pool::pool_stats& st) {
              std::printf("batches %llu (%llu jobs), sent ahead %llu, taken "
                          "back %llu\n",
                          static_cast<unsigned long long>(st.batches),
                          static_cast<unsigned long long>(st.batched),
                          static_cast<unsigned long long>(st.sent_ahead),
                          static_cast<unsigned long long>(st.taken_back));
            },
            [](caf::error&) {});
  }
  caf::anon_send_exit(dest, caf::exit_reason::user_shutdown);
  return res.errors == 0 ? 0 : 1;
}
