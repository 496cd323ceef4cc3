#pragma once

// The fixture of the durable pool's tests (tests/durable.cpp,
// tests/durable_faults.cpp): a pool over an SQLite file on the testing
// scheduler, with a job that counts its runs, crashes, and requests that
// wait for their answers.

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "deterministic.hpp"
#include "pool/all.hpp"
#include "sqlite_files.hpp"

namespace pool::test::durable {

using pool::test::deterministic;

/// Counts how often each input ran; fails inputs below 0.
struct job_log {
  std::shared_ptr<std::map<int, int>> runs =
      std::make_shared<std::map<int, int>>();

  auto job() const {
    return [runs = runs](int x) -> int {
      ++(*runs)[x];
      if (x < 0)
        throw std::runtime_error("negative input");
      return x * 10;
    };
  }
};

struct durable_fixture : deterministic {
  pool::test::temp_dir tmp;
  std::string file = tmp.path + "/pool.db";
  job_log log;

  /// Commits as soon as the queue's mailbox is drained: simulated time only
  /// moves when a test says so.
  pool::pool_options options(size_t workers = 1) {
    return pool::pool_options{}
        .workers(workers)
        .durable(file)
        .commit_interval(caf::timespan{0})
        .log(pool::silent_log_hook());
  }

  caf::actor start(pool::pool_options opts) {
    auto pool = pool::spawn_pool(sys, log.job(), std::move(opts));
    REQUIRE_MESSAGE(pool, pool::describe(pool.error()));
    run();
    return *pool;
  }

  /// Kills `pool` as a crash would (nothing is drained or recorded).
  void crash(caf::actor& pool) {
    // A crash ends the process: frozen workers holding work must not run it
    // once the pool is gone, so they die first (an urgent exit message is
    // handled before anything else in their mailboxes).
    if (!frozen.empty())
      for (auto job : sched.jobs)
        if (auto actor = dynamic_cast<caf::scheduled_actor*>(job);
            actor != nullptr && frozen == actor->name())
          caf::anon_send<caf::message_priority::high>(
              caf::actor_cast<caf::actor>(actor->ctrl()),
              caf::exit_msg{caf::actor_addr{}, caf::exit_reason::kill});
    caf::anon_send_exit(pool, caf::exit_reason::kill);
    pool = nullptr;
    frozen.clear();
    run();
    drop_outcomes(); // notifications and replies from the dead pool
  }

  uint64_t enqueue(const caf::actor& pool, int x) {
    uint64_t id = 0;
    auto answer = self->request(pool, caf::infinite, pool::enqueue_atom_v, x);
    run();
    answer.receive([&](uint64_t op) { id = op; },
                   [](caf::error& err) { FAIL(pool::describe(err)); });
    return id;
  }

  caf::expected<uint64_t> enqueue_unique(const caf::actor& pool,
                                         const std::string& key, int x) {
    caf::expected<uint64_t> result{uint64_t{0}};
    auto answer =
        self->request(pool, caf::infinite, pool::enqueue_unique_atom_v, key, x);
    run();
    answer.receive([&](uint64_t op) { result = op; },
                   [&](caf::error& err) { result = std::move(err); });
    return result;
  }

  caf::expected<pool::operation_record> status(const caf::actor& pool,
                                               uint64_t id) {
    caf::expected<pool::operation_record> result{pool::operation_record{}};
    auto answer =
        self->request(pool, caf::infinite, pool::op_status_atom_v, id);
    run();
    answer.receive([&](pool::operation_record& x) { result = std::move(x); },
                   [&](caf::error& err) { result = std::move(err); });
    return result;
  }

  /// Drops outcome notifications (`op_done` / `op_failed`) and plain
  /// replies from the scoped actor's mailbox.
  void drop_outcomes() {
    while (!self->mailbox().empty())
      self->receive([](pool::op_done_atom, uint64_t, caf::message&) {},
                    [](pool::op_failed_atom, uint64_t, caf::error&) {},
                    [](uint64_t) {}, [](int) {}, [](caf::error&) {});
  }
};

} // namespace pool::test::durable
