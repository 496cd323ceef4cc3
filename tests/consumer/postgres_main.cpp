// Links pool::postgres alone: the store is there (it tries the server and
// says why it could not connect), not refused as unlinked.
#include <iostream>
#include <string>

#include <caf/all.hpp>
#include <pool/all.hpp>

int main() {
  caf::actor_system_config cfg;
  pool::configure(cfg);
  caf::actor_system sys{cfg};
  // Port 1 on 127.0.0.1: refused at once, no server needed.
  auto pool = pool::spawn_pool(
      sys, [](int x) { return x; },
      pool::pool_options{}
          .postgres("host=127.0.0.1 port=1 dbname=none user=none",
                    pool::pg_options{}.connect_timeout(std::chrono::seconds(1)))
          .log(pool::silent_log_hook()));
  if (pool) {
    std::cerr << "consumer_postgres: a pool on port 1?\n";
    return 1;
  }
  auto why = pool::describe(pool.error());
  std::cout << "consumer_postgres: " << why << '\n';
  return why.find("does not link") == std::string::npos ? 0 : 1;
}
