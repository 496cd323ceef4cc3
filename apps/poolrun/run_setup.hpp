// Everything a run needs before its first command: the shell, the hosts and
// their slots, the input, the resume record, and the pool.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "executor.hpp"
#include "feeder.hpp"
#include "joblog.hpp"
#include "options.hpp"
#include "slots.hpp"

namespace poolrun {

/// Set up in `prepare`, handed to the runner, closed in `finish`.
struct run_setup {
  run_options options;
  std::shared_ptr<feeder> input;
  std::shared_ptr<slot_table> slots;
  std::shared_ptr<executor> exec;
  std::shared_ptr<joblog_record> resume;
  /// Workers of the pool: one per slot.
  size_t workers = 1;

  /// Checks and completes `opts` (the shell, ssh settings), reads the
  /// joblog to resume, opens the input and connects the hosts. Returns
  /// what is wrong, or "". Blocks while connecting.
  std::string prepare(run_options& opts);

  /// Spawns the pool: a worker per slot running `execute`, durable with
  /// --journal. Nothing (and `error` set) when it cannot start.
  caf::actor spawn_pool(caf::actor_system& sys, std::string& error);

  /// Closes the hosts' connections; leaves a feeder still reading behind.
  void finish();
};

} // namespace poolrun
