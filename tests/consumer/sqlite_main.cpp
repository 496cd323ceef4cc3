// Links pool::sqlite alone: a durable pool opens its file and runs a job.
#include <cstdio>
#include <iostream>
#include <string>

#include <caf/all.hpp>
#include <pool/all.hpp>

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1] : "consumer_sqlite.db";
  std::remove(path.c_str());
  caf::actor_system_config cfg;
  pool::configure(cfg);
  caf::actor_system sys{cfg};
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x * x; },
      pool::pool_options{}.workers(2).durable(path).log(
          pool::silent_log_hook()));
  if (!pool) {
    std::cerr << "consumer_sqlite: " << pool::describe(pool.error()) << '\n';
    return 1;
  }
  auto result =
      pool::blocking_submit<int>(sys, *pool, std::chrono::seconds(10), 12);
  if (!result) {
    std::cerr << "consumer_sqlite: " << pool::describe(result.error()) << '\n';
    return 1;
  }
  std::cout << "consumer_sqlite: 12 squared is " << *result << " (durable)\n";
  caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
  return *result == 144 ? 0 : 1;
}
