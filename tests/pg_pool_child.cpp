// A pool process over a shared PostgreSQL queue, for tests/pg_pool.cpp:
// spawns a pool with `pool_options::postgres`; with ENQUEUE > 0 submits
// inputs 1..ENQUEUE as unique operations (key "op-<input>", so a restarted
// process gets the ids it had); then runs what it claims until killed.
// Every job run appends "ran <input>" to OUTPUT_FILE (one write each, so a
// SIGKILL loses no line of a job that ran), and returns input * input.
// Prints "ready" once its pool is up and "enqueued" once every submit has
// an id. With ENQUEUE "cron" it instead runs a periodic schedule named
// "tick" every second (`pool::spawn_periodic`) whose job appends "tick
// <operation id>"; with "cron-late" its clock runs 400 ms behind, so that
// it enqueues each tick after the other process's run of it finished.
// Optional: JOB_MS (each job's time, default 0.5 ms), LEASE_S (default 1)
// and WORKERS (default 2).
// Usage: pg_pool_child CONNINFO OUTPUT_FILE ENQUEUE|cron|cron-late
//        [JOB_MS [LEASE_S [WORKERS]]]
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
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

void say(int fd, const std::string& line) {
  auto text = line + "\n";
  // O_APPEND: one write is one line, whatever the other processes do.
  static_cast<void>(::write(fd, text.data(), text.size()));
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 7) {
    std::fprintf(stderr, "usage: pg_pool_child CONNINFO OUTPUT_FILE "
                         "ENQUEUE [JOB_MS [LEASE_S [WORKERS]]]\n");
    return 2;
  }
  auto job_time = argc > 4 ? std::chrono::microseconds{std::atol(argv[4])
                                                       * 1000}
                           : std::chrono::microseconds{500};
  auto lease = std::chrono::seconds{argc > 5 ? std::atol(argv[5]) : 1};
  auto workers = static_cast<size_t>(argc > 6 ? std::atol(argv[6]) : 2);
  auto fd = ::open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(argv[2]);
    return 1;
  }
  auto late = std::string{argv[3]} == "cron-late";
  auto cron = late || std::string{argv[3]} == "cron";
  auto enqueue = cron ? 0 : std::atol(argv[3]);
  config cfg;
  caf::actor_system sys{cfg};
  auto job = [fd, job_time](int64_t x) {
    if (x < 0) // a tick
      say(fd, "tick " + std::to_string(pool::current_job()->operation));
    else
      say(fd, "ran " + std::to_string(x));
    std::this_thread::sleep_for(job_time);
    return x * x;
  };
  auto opts = pool::pool_options{}
                  .workers(workers)
                  .max_attempts(50) // every kill costs a held attempt
                  .unique_window(std::chrono::hours(1))
                  .postgres(argv[1],
                            pool::pg_options{}.queue("chaos").lease(lease))
                  .log(pool::silent_log_hook());
  if (argc > 4) // long jobs on threads of their own
    opts.kind(pool::worker_kind::dedicated);
  auto pool = pool::spawn_pool(sys, job, opts);
  if (!pool) {
    std::fprintf(stderr, "%s\n", pool::describe(pool.error()).c_str());
    return 1;
  }
  std::optional<caf::actor> periodic;
  if (cron) {
    auto spec = pool::periodic_spec{};
    spec.name = "tick";
    spec.cron = "* * * * * *";
    spec.log = pool::silent_log_hook();
    if (late)
      spec.clock = [] {
        return std::chrono::system_clock::now()
               - std::chrono::milliseconds(400);
      };
    auto started = pool::spawn_periodic(sys, *pool, spec, int64_t{-1});
    if (!started) {
      std::fprintf(stderr, "%s\n", pool::describe(started.error()).c_str());
      return 1;
    }
    periodic = *started;
  }
  say(fd, "ready");
  caf::scoped_actor self{sys};
  // In windows of 500 outstanding submits.
  long sent = 0;
  long acked = 0;
  while (acked < enqueue) {
    while (sent < enqueue && sent - acked < 500) {
      ++sent;
      self->send(*pool, pool::enqueue_unique_atom_v,
                 "op-" + std::to_string(sent), static_cast<int64_t>(sent));
    }
    self->receive([&](uint64_t) { ++acked; },
                  [&](pool::op_done_atom, uint64_t, caf::message&) {},
                  [&](pool::op_failed_atom, uint64_t, caf::error&) {},
                  [&](caf::error& err) {
                    std::fprintf(stderr, "submit: %s\n",
                                 pool::describe(err).c_str());
                    std::exit(1);
                  });
  }
  if (enqueue > 0)
    say(fd, "enqueued");
  for (;;) // Outcomes of our submits may arrive; the parent kills us.
    self->receive([&](pool::op_done_atom, uint64_t, caf::message&) {},
                  [&](pool::op_failed_atom, uint64_t, caf::error&) {},
                  caf::after(std::chrono::seconds(1)) >> [] {});
}
