// Uses the installed remote layer: a pool published on loopback, a node
// joining it from a second actor system, one submit that the node runs.
#include <iostream>

#include <caf/all.hpp>
#include <pool/all.hpp>
#include <pool/remote.hpp>

namespace {

struct config : caf::actor_system_config {
  config() {
    pool::configure_remote(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

int64_t triple(int32_t x) {
  return 3 * int64_t{x};
}

} // namespace

int main() {
  config cfg;
  caf::actor_system sys{cfg};
  auto quiet = pool::silent_log_hook();
  // No local worker takes work while the node is there: it is busy.
  auto pool =
      pool::spawn_pool(sys, triple, pool::pool_options{}.workers(1).log(quiet));
  if (!pool) {
    std::cerr << "consumer: " << pool::describe(pool.error()) << '\n';
    return 1;
  }
  auto port = pool::publish_pool<int64_t(int32_t)>(
      sys, *pool, pool::remote_options{}.token("consumer").log(quiet));
  if (!port) {
    std::cerr << "consumer: " << pool::describe_remote(port.error()) << '\n';
    return 1;
  }
  config node_cfg;
  caf::actor_system node_sys{node_cfg};
  auto node =
      pool::join_remote_pool(node_sys, "127.0.0.1", *port, "consumer", 1,
                             triple, pool::node_options{}.log(quiet));
  if (!node) {
    std::cerr << "consumer: " << pool::describe_remote(node.error()) << '\n';
    return 1;
  }
  auto result =
      pool::blocking_submit<int64_t>(sys, *pool, std::chrono::seconds(10), 14);
  pool::leave_remote_pool(node_sys, *node);
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
  if (!result) {
    std::cerr << "consumer: " << pool::describe(result.error()) << '\n';
    return 1;
  }
  std::cout << "consumer: 14 tripled remotely or not is " << *result << '\n';
  return *result == 42 ? 0 : 1;
}
