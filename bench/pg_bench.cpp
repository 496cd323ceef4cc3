// One process of the PostgreSQL queue benchmarks (bench/run_pg and
// bench/run_pg_peers drive it): spawns a pool of WORKERS workers over
// STORE, prints "ready" once the pool is up, waits for GO_FILE to exist,
// and prints "done <seconds from go to the end> <CPU seconds meanwhile>".
//
// MODE (default window):
//   window  enqueues N trivial operations (a window of 1,000 outstanding)
//           and ends at the last outcome of its own operations.
//   fill    (PostgreSQL only) enqueues N operations into a paused pool,
//           waits until every one is stored, and exits without running
//           any; ignores GO_FILE and prints "filled <seconds>".
//   drain   (PostgreSQL only) spawns the pool paused, resumes it at go and
//           ends once the queue has no unfinished entry left (checked on
//           the server whenever none of its workers is busy).
//
// STORE: "memory", "sqlite:<file>" (FULL sync) or a PostgreSQL conninfo
// (queue "bench": every process of a run shares it).
// Usage: pg_bench STORE WORKERS N GO_FILE [window|fill|drain]
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <libpq-fe.h>

#include "pool/all.hpp"

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

[[noreturn]] void fail(const char* what, const caf::error& err) {
  std::fprintf(stderr, "%s: %s\n", what, pool::describe(err).c_str());
  std::exit(1);
}

/// User + system CPU seconds of this process so far.
double cpu_seconds() {
  rusage use{};
  ::getrusage(RUSAGE_SELF, &use);
  auto secs = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return secs(use.ru_utime) + secs(use.ru_stime);
}

void wait_for(const std::string& go) {
  while (::access(go.c_str(), F_OK) != 0)
    std::this_thread::sleep_for(200us);
}

/// Enqueues N operations, at most 1,000 unanswered; with `outcomes`, an
/// operation is answered by its outcome, else by its acknowledgement.
void submit(caf::scoped_actor& self, const caf::actor& pool, long n,
            bool outcomes) {
  long sent = 0;
  long done = 0;
  while (done < n) {
    while (sent < n && sent - done < 1000) {
      ++sent;
      self->send(pool, pool::enqueue_atom_v, static_cast<int64_t>(sent));
    }
    self->receive([&](uint64_t) { done += outcomes ? 0 : 1; },
                  [&](pool::op_done_atom, uint64_t, caf::message&) { ++done; },
                  [&](pool::op_failed_atom, uint64_t, caf::error& err) {
                    fail("failed", err);
                  },
                  [&](caf::error& err) { fail("refused", err); });
  }
}

/// True while the queue "bench" has an entry that is queued or held.
bool unfinished(PGconn* conn) {
  auto res = PQexec(conn, "SELECT EXISTS (SELECT 1 FROM pool.operations "
                          "WHERE queue = 'bench' AND state <= 1)");
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    std::fprintf(stderr, "check: %s", PQerrorMessage(conn));
    std::exit(1);
  }
  bool left = PQgetvalue(res, 0, 0)[0] == 't';
  PQclear(res);
  return left;
}

/// Resumes the pool and returns once the queue has nothing unfinished.
void drain_queue(caf::scoped_actor& self, const caf::actor& pool,
                 PGconn* conn) {
  self->request(pool, 30s, pool::resume_atom_v)
      .receive([] {}, [](caf::error& err) { fail("resume", err); });
  for (;;) {
    uint64_t busy = 1;
    self->request(pool, 30s, pool::pool_stats_atom_v)
        .receive([&](pool::pool_stats& st) { busy = st.busy; },
                 [](caf::error& err) { fail("stats", err); });
    if (busy == 0 && !unfinished(conn))
      return;
    std::this_thread::sleep_for(busy == 0 ? 5ms : 2ms);
  }
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: pg_bench STORE WORKERS N GO_FILE "
                         "[window|fill|drain]\n");
    return 2;
  }
  std::string store = argv[1];
  auto workers = std::strtoul(argv[2], nullptr, 10);
  auto n = std::strtol(argv[3], nullptr, 10);
  std::string go = argv[4];
  std::string mode = argc == 6 ? argv[5] : "window";
  bool pg = store != "memory" && store.rfind("sqlite:", 0) != 0;
  if (mode != "window" && (!pg || (mode != "fill" && mode != "drain"))) {
    std::fprintf(stderr, "pg_bench: mode %s needs PostgreSQL\n", mode.c_str());
    return 2;
  }
  config cfg;
  caf::actor_system sys{cfg};
  auto opts = pool::pool_options{}.workers(workers).log(
      pool::silent_log_hook());
  if (pg)
    opts.postgres(store, "bench");
  else if (store != "memory")
    opts.durable(store.substr(7), pool::sqlite_sync::full);
  PGconn* conn = nullptr;
  if (mode == "drain") {
    conn = PQconnectdb(store.c_str());
    if (PQstatus(conn) != CONNECTION_OK) {
      std::fprintf(stderr, "connect: %s", PQerrorMessage(conn));
      return 1;
    }
  }
  auto pool = pool::spawn_pool(sys, [](int64_t x) { return x; }, opts);
  if (!pool) {
    std::fprintf(stderr, "%s\n", pool::describe(pool.error()).c_str());
    return 1;
  }
  caf::scoped_actor self{sys};
  if (mode != "window")
    self->request(*pool, 30s, pool::pause_atom_v)
        .receive([] {}, [](caf::error& err) { fail("pause", err); });
  if (mode == "fill") {
    auto start = steady::now();
    submit(self, *pool, n, false);
    std::chrono::duration<double> took = steady::now() - start;
    std::printf("filled %.6f\n", took.count());
    std::fflush(stdout);
    // Stopped without a drain: the queued entries stay for the others.
    self->send_exit(*pool, caf::exit_reason::user_shutdown);
    self->wait_for(*pool);
    return 0;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  wait_for(go);
  auto start = steady::now();
  auto cpu = cpu_seconds();
  if (mode == "drain")
    drain_queue(self, *pool, conn);
  else
    submit(self, *pool, n, true);
  std::chrono::duration<double> took = steady::now() - start;
  std::printf("done %.6f %.6f\n", took.count(), cpu_seconds() - cpu);
  std::fflush(stdout);
  self->request(*pool, 30s, pool::drain_atom_v)
      .receive([] {}, [](caf::error&) {});
  if (conn)
    PQfinish(conn);
  return 0;
}
