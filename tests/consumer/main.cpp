// Uses the installed library: its version, a pool, one blocking submit.
#include <iostream>
#include <string>

#include <caf/all.hpp>
#include <pool/all.hpp>

int main() {
  // The library, its headers and the CMake package agree on the version.
  std::cout << "consumer: pool " << pool::version() << '\n';
  if (std::string{pool::version()} != POOL_VERSION ||
      std::string{pool::version()} != PACKAGE_VERSION_FOUND) {
    std::cerr << "consumer: pool::version() is " << pool::version()
              << ", POOL_VERSION is " << POOL_VERSION
              << ", find_package(pool) found " << PACKAGE_VERSION_FOUND << '\n';
    return 1;
  }
  caf::actor_system_config cfg;
  pool::configure(cfg);
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x * x; },
      pool::pool_options{}.workers(2).log(pool::silent_log_hook()));
  if (!pool) {
    std::cerr << "consumer: " << pool::describe(pool.error()) << '\n';
    return 1;
  }
  auto result =
      pool::blocking_submit<int>(sys, *pool, std::chrono::seconds(10), 12);
  if (!result) {
    std::cerr << "consumer: " << pool::describe(result.error()) << '\n';
    return 1;
  }
  std::cout << "consumer: 12 squared is " << *result << '\n';
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
  // This program links neither store: a durable pool is refused, saying
  // which target to link.
  auto durable = pool::spawn_pool(
      sys, [](int x) { return x; },
      pool::pool_options{}.durable("unused.db").log(pool::silent_log_hook()));
  auto why = durable ? std::string{} : pool::describe(durable.error());
  if (why.find("link pool::sqlite") == std::string::npos) {
    std::cerr << "consumer: a durable pool without pool::sqlite: '" << why
              << "'\n";
    return 1;
  }
  std::cout << "consumer: durable without pool::sqlite: " << why << '\n';
  return *result == 144 ? 0 : 1;
}
