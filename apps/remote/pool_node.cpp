// Pool node: joins a remote pool with N workers running the demo job, and
// rejoins with fresh workers whenever the connection to the pool drops.
//
//   pool_node --host 127.0.0.1 --port P [--token-file FILE] [--workers N]
//             [--kind dedicated|cooperative] [--delay-ms D]
//             [--give-up-after-ms M]
//
// The token comes from --token-file, POOL_TOKEN_FILE or POOL_TOKEN, never
// from the command line (see `--help`).
//
// Prints `joined ... as node <CAF node id>` once it joined. On
// SIGINT/SIGTERM it leaves and prints `jobs <count>` (the jobs its workers
// ran); exit status 0. A refused or failed first join prints the error and
// `jobs 0`; exit status 1.
#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include <caf/all.hpp>
#include <pool/remote.hpp>

#include "command_line.hpp"
#include "demo_job.hpp"

namespace {

constexpr const char* usage =
    "usage: pool_node --host H --port P [--token-file FILE] [--workers N] "
    "[--kind dedicated|cooperative] [--delay-ms D] [--give-up-after-ms M]";

std::atomic<uint64_t> jobs_run{0};

} // namespace

int main(int argc, char** argv) {
  auto args = remote_demo::parse_command_line(argc, argv);
  auto port = args.number("port", 0, UINT16_MAX);
  auto workers = args.number("workers", 4, 10000);
  auto delay_ms = args.number("delay-ms", 0, 60000);
  auto give_up_ms = args.number("give-up-after-ms", 0);
  auto kind = args.text("kind", "dedicated");
  if (args.has("help")) {
    std::cout << usage << "\n\n" << remote_demo::token_help;
    return 0;
  }
  if (!args.error.empty() || !port || *port == 0 || !workers || !delay_ms ||
      !give_up_ms || !args.has("host") ||
      (kind != "dedicated" && kind != "cooperative")) {
    std::cerr << (args.error.empty() ? "" : args.error + "\n") << usage << '\n';
    return 2;
  }
  std::string why;
  auto token = remote_demo::token_of(args, why);
  if (!token) {
    std::cerr << "pool_node: " << why << '\n';
    return 2;
  }
  auto signals = remote_demo::block_stop_signals();
  caf::actor_system_config cfg;
  remote_demo::configure(cfg);
  caf::actor_system sys{cfg};
  auto delay = std::chrono::milliseconds(*delay_ms);
  // Dedicated workers may block, so the optional delay is a plain sleep.
  auto job = [delay](int32_t x) -> int64_t {
    if (delay.count() > 0)
      std::this_thread::sleep_for(delay);
    ++jobs_run;
    return remote_demo::hash_job(x);
  };
  auto opts = pool::node_options{}.kind(kind == "dedicated"
                                            ? pool::worker_kind::dedicated
                                            : pool::worker_kind::cooperative);
  if (*give_up_ms > 0)
    opts.give_up_after(std::chrono::milliseconds(*give_up_ms));
  auto node = pool::join_remote_pool(sys, args.text("host"),
                                     static_cast<uint16_t>(*port), *token,
                                     *workers, job, opts);
  if (!node) {
    std::cerr << "cannot join: " << pool::describe_remote(node.error()) << '\n';
    std::cout << "jobs 0" << std::endl;
    return 1;
  }
  std::cout << "joined " << args.text("host") << ':' << *port << " with "
            << *workers << " workers as node " << caf::to_string(sys.node())
            << std::endl;
  auto signalled = remote_demo::wait_for_stop(sys, *node, signals);
  if (signalled)
    if (auto err = pool::leave_remote_pool(sys, *node))
      std::cerr << "leaving: " << pool::describe_remote(err) << '\n';
  std::cout << "jobs " << jobs_run.load() << std::endl;
  if (!signalled) {
    std::cerr << "the node stopped: it could not rejoin the pool\n";
    return 1;
  }
  return 0;
}
