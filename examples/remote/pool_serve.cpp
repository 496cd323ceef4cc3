// Pool server: spawns a pool running the demo job, publishes it for remote
// worker nodes and operators, and serves until it is drained.
//
//   pool_serve --token T [--port P] [--bind ADDRESS] [--reuse-address]
//              [--workers N] [--max-attempts N] [--submit N]
//              [--tls-cert F --tls-key F --tls-ca F]
//
// The first line on stdout is the port. With `--submit N` it submits the
// inputs 1..N itself and prints `completed <n> correct <k>` once all are
// done. It stops, exit status 0, when the pool stops (`poolctl ... drain`)
// or on SIGINT/SIGTERM.
#include <chrono>
#include <iostream>
#include <memory>

#include <caf/all.hpp>
#include <pool/all.hpp>
#include <pool/remote.hpp>

#include "command_line.hpp"
#include "demo_job.hpp"

namespace {

constexpr const char* usage =
    "usage: pool_serve --token T [--port P] [--bind ADDRESS] "
    "[--reuse-address] [--workers N] [--max-attempts N] [--submit N] "
    "[--tls-cert F --tls-key F --tls-ca F]";

/// Submits 1..n in batches (one actor per batch keeps each actor's list of
/// pending requests short) and prints the tally once every answer is in.
void submit_all(caf::actor_system& sys, const caf::actor& pool, int32_t n) {
  struct tally {
    int32_t done = 0;
    int32_t correct = 0;
    int32_t total = 0;
  };
  auto count = std::make_shared<tally>();
  count->total = n;
  // One shared counter, updated from one actor: the collector.
  auto collector = sys.spawn([count](caf::event_based_actor*) {
    return caf::behavior{[count](bool ok) {
      ++count->done;
      count->correct += ok ? 1 : 0;
      if (count->done == count->total)
        std::cout << "completed " << count->done << " correct "
                  << count->correct << std::endl;
    }};
  });
  constexpr int32_t batch = 100;
  for (int32_t first = 1; first <= n; first += batch) {
    auto last = std::min(n, first + batch - 1);
    sys.spawn([=](caf::event_based_actor* self) {
      for (auto x = first; x <= last; ++x)
        self->request(pool, caf::infinite, pool::submit_atom_v, x)
            .then(
                [=](int64_t y) {
                  self->send(collector, y == remote_demo::hash_job(x));
                },
                [=](caf::error&) { self->send(collector, false); });
    });
  }
}

} // namespace

int main(int argc, char** argv) {
  auto args = remote_demo::parse_command_line(argc, argv, {"reuse-address"});
  auto port = args.number("port", 0, UINT16_MAX);
  auto workers = args.number("workers", 1, 10000);
  auto attempts = args.number("max-attempts", 3, 1000);
  auto submit = args.number("submit", 0, INT32_MAX);
  if (!args.error.empty() || !port || !workers || *workers == 0 || !attempts ||
      *attempts == 0 || !submit || !args.has("token")) {
    std::cerr << (args.error.empty() ? "" : args.error + "\n") << usage << '\n';
    return 2;
  }
  auto signals = remote_demo::block_stop_signals();
  auto tls = remote_demo::tls_from(args);
  caf::actor_system_config cfg;
  if (auto problem = remote_demo::configure(cfg, tls); !problem.empty()) {
    std::cerr << problem << '\n';
    return 2;
  }
  caf::actor_system sys{cfg};
  auto opts = pool::pool_options{}
                  .workers(*workers)
                  .kind(pool::worker_kind::dedicated)
                  .max_attempts(static_cast<uint32_t>(*attempts))
                  .name("pool_serve");
  auto pool = pool::spawn_pool(sys, remote_demo::hash_job, opts);
  if (!pool) {
    std::cerr << "cannot start the pool: " << pool::describe(pool.error())
              << '\n';
    return 1;
  }
  auto remote = pool::remote_options{}
                    .token(args.text("token"))
                    .bind_address(args.text("bind", "127.0.0.1"))
                    .port(static_cast<uint16_t>(*port))
                    .reuse_address(args.has("reuse-address"));
  if (tls)
    remote.tls(*tls);
  auto bound =
      pool::publish_pool<decltype(remote_demo::hash_job)>(sys, *pool, remote);
  if (!bound) {
    std::cerr << "cannot publish the pool: "
              << pool::describe_remote(bound.error()) << '\n';
    caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::cout << *bound << std::endl;
  if (*submit > 0)
    submit_all(sys, *pool, static_cast<int32_t>(*submit));
  auto signalled = remote_demo::wait_for_stop(sys, *pool, signals);
  if (signalled)
    caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
  std::cout << "pool stopped" << std::endl;
  return 0;
}
