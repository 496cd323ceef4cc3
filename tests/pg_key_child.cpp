// A pool process whose jobs carry concurrency keys, over a shared
// PostgreSQL queue (queue "keys"), for tests/pg_key_processes.cpp. Every
// key may run once at a time, "wide" twice (`pool_options::key_flow`,
// which the store hands to the database). Each job's worker holds its own
// connection to the server (its resource) and writes the job's start and
// end into the table `runs` (created by the test) as the server's clock
// saw them; the job lasts JOB_MS (default 3) and returns its key's length.
// With ROUNDS > 0 it first submits ROUNDS operations of each of "a", "b"
// and "wide", key after key. Writes "ready" to READY_FILE once its pool is
// up and "enqueued" once every submit has an id; on SIGTERM it stops its
// pool, waits for it, and exits 0.
// Usage: pg_key_child CONNINFO READY_FILE ROUNDS [JOB_MS [WORKERS]]
#include <fcntl.h>
#include <libpq-fe.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "pool/all.hpp"

#include "runs_db.hpp"

using pool::test::runs_db;

namespace {

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

volatile std::sig_atomic_t stopping = 0;

void on_term(int) {
  stopping = 1;
}

void say(int fd, const std::string& line) {
  auto text = line + "\n";
  static_cast<void>(::write(fd, text.data(), text.size()));
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: pg_key_child CONNINFO READY_FILE ROUNDS "
                         "[JOB_MS [WORKERS]]\n");
    return 2;
  }
  std::string conninfo = argv[1];
  auto rounds = std::atol(argv[3]);
  auto job_time = std::chrono::milliseconds{argc > 4 ? std::atol(argv[4]) : 3};
  auto workers = static_cast<size_t>(argc > 5 ? std::atol(argv[5]) : 3);
  auto fd = ::open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(argv[2]);
    return 1;
  }
  std::signal(SIGTERM, on_term);
  config cfg;
  caf::actor_system sys{cfg};
  auto connect = [conninfo] { return runs_db::connect(conninfo); };
  auto job = [job_time](runs_db& db, std::string key) {
    db.note(key, "start");
    std::this_thread::sleep_for(job_time);
    db.note(key, "end");
    return static_cast<int64_t>(key.size());
  };
  auto flow = pool::key_flow_options{}
                .every_key(pool::key_limit{1, std::nullopt})
                .key("wide", pool::key_limit{2, std::nullopt});
  auto opts = pool::pool_options{}
                .workers(workers)
                .key_flow(flow)
                .postgres(conninfo, pool::pg_options{}.queue("keys"))
                .log(pool::silent_log_hook());
  auto pool = pool::spawn_resource_pool(sys, connect, job, opts);
  if (!pool) {
    std::fprintf(stderr, "%s\n", pool::describe(pool.error()).c_str());
    return 1;
  }
  say(fd, "ready");
  caf::scoped_actor self{sys};
  long acked = 0;
  auto keyed = [](const char* key) {
    return pool::job_options{}.concurrency_key(key);
  };
  for (long i = 0; i < rounds; ++i)
    for (auto key : {"a", "b", "wide"})
      self->send(*pool, pool::enqueue_with_atom_v, keyed(key),
                 std::string{key});
  while (acked < 3 * rounds && stopping == 0)
    self->receive([&](uint64_t) { ++acked; },
                  [&](pool::op_done_atom, uint64_t, caf::message&) {},
                  [&](pool::op_failed_atom, uint64_t, caf::error&) {},
                  [&](caf::error& err) {
                    std::fprintf(stderr, "submit: %s\n",
                                 pool::describe(err).c_str());
                    std::exit(1);
                  },
                  caf::after(std::chrono::milliseconds(100)) >> [] {});
  if (rounds > 0)
    say(fd, "enqueued");
  while (stopping == 0) // outcomes of our submits arrive meanwhile
    self->receive([&](pool::op_done_atom, uint64_t, caf::message&) {},
                  [&](pool::op_failed_atom, uint64_t, caf::error&) {},
                  caf::after(std::chrono::milliseconds(100)) >> [] {});
  // A graceful stop: what this pool claimed and never started goes back.
  self->monitor(*pool);
  self->send_exit(*pool, caf::exit_reason::user_shutdown);
  self->receive([](caf::down_msg&) {},
                caf::after(std::chrono::seconds(30)) >> [] {
                  std::fprintf(stderr, "the pool did not stop in 30 s\n");
                  std::exit(1);
                });
  say(fd, "stopped");
  return 0;
}
