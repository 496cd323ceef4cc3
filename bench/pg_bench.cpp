// One process of the PostgreSQL queue benchmark (bench/run_pg drives it):
// spawns a pool of WORKERS workers over STORE, waits for GO_FILE to exist,
// then enqueues N trivial operations (a window of 1,000 outstanding) and
// waits for every outcome. Prints "ready" once the pool is up, and at the
// end "done <seconds from go to the last outcome>".
//
// STORE: "memory", "sqlite:<file>" (FULL sync) or a PostgreSQL conninfo
// (queue "bench": every process of a run shares it).
// Usage: pg_bench STORE WORKERS N GO_FILE
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "pool/all.hpp"

namespace {

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

} // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: pg_bench STORE WORKERS N GO_FILE\n");
    return 2;
  }
  std::string store = argv[1];
  auto workers = std::strtoul(argv[2], nullptr, 10);
  auto n = std::strtol(argv[3], nullptr, 10);
  std::string go = argv[4];
  config cfg;
  caf::actor_system sys{cfg};
  auto opts = pool::pool_options{}.workers(workers).log(
      pool::silent_log_hook());
  if (store.rfind("sqlite:", 0) == 0)
    opts.durable(store.substr(7), pool::sqlite_sync::full);
  else if (store != "memory")
    opts.postgres(store, "bench");
  auto pool = pool::spawn_pool(sys, [](int64_t x) { return x; }, opts);
  if (!pool) {
    std::fprintf(stderr, "%s\n", pool::describe(pool.error()).c_str());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  while (::access(go.c_str(), F_OK) != 0)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  auto start = std::chrono::steady_clock::now();
  caf::scoped_actor self{sys};
  long sent = 0;
  long done = 0;
  while (done < n) {
    while (sent < n && sent - done < 1000) {
      ++sent;
      self->send(*pool, pool::enqueue_atom_v, static_cast<int64_t>(sent));
    }
    self->receive([](uint64_t) {},
                  [&](pool::op_done_atom, uint64_t, caf::message&) { ++done; },
                  [&](pool::op_failed_atom, uint64_t, caf::error& err) {
                    std::fprintf(stderr, "failed: %s\n",
                                 pool::describe(err).c_str());
                    std::exit(1);
                  },
                  [&](caf::error& err) {
                    std::fprintf(stderr, "refused: %s\n",
                                 pool::describe(err).c_str());
                    std::exit(1);
                  });
  }
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::printf("done %.6f\n", took.count());
  std::fflush(stdout);
  self->request(*pool, std::chrono::seconds(30), pool::drain_atom_v)
      .receive([] {}, [](caf::error&) {});
  return 0;
}
