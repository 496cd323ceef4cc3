// The runner actor: feeds the pool, prints outcomes, resumes, drains.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/actor.hpp>
#include <caf/behavior.hpp>
#include <caf/stateful_actor.hpp>

#include <pool/events.hpp>
#include <pool/operation_record.hpp>
#include <pool/stats.hpp>

#include "arguments.hpp"
#include "job.hpp"
#include "report.hpp"

namespace poolrun {

/// What the runner needs; moved into it at spawn.
struct runner_config {
  run_options options;
  /// One command per input line; line `i` has sequence number `i + 1`.
  std::vector<std::string> commands;
  /// The pool's handle (a shepherd of dedicated workers running `run_job`).
  caf::actor pool;
  /// Where outputs, the joblog and progress go.
  std::shared_ptr<report> out;
  /// Receives poolrun's exit status once, when the runner is done.
  std::shared_ptr<std::promise<int>> exit_status;
};

/// The runner's state. Outcomes of all operations arrive as `pool_event`s
/// (the runner subscribes to completed, failed and retried), including
/// those of operations a durable pool adopted from an earlier run, which
/// have no listener.
struct runner_state {
  static inline const char* name = "poolrun.runner";

  using actor_type = caf::stateful_actor<runner_state>;

  /// Where one input line stands.
  enum class phase : uint8_t {
    /// Not handed to the pool yet.
    waiting,
    /// Handed to the pool; its operation id is not known yet.
    submitted,
    /// The pool runs (or queued, or adopted) its operation.
    running,
    /// Its outcome is known; waiting for the journal to record it.
    recording,
    /// Printed and counted.
    finished,
  };

  ~runner_state();

  caf::behavior init(actor_type* self, runner_config cfg);

private:
  struct line {
    phase state = phase::waiting;
    uint64_t operation = 0;
  };

  bool journaled() const {
    return !cfg_.options.journal.empty();
  }

  void feed();
  void submit(size_t seq);
  void on_submitted(size_t seq, uint64_t operation);
  void on_status(size_t seq, uint64_t operation,
                 const pool::operation_record& rec);
  void on_event(pool::pool_event& ev);
  void on_outcome(size_t seq, const pool::pool_event& ev);
  void finish_line(size_t seq, std::optional<job_result> res, bool succeeded,
                   bool cancelled);
  void finished_earlier(size_t seq, const pool::operation_record& rec);
  void interrupt();
  void check_end();
  void close_pool();
  void finish();
  void fail_run(const std::string& why);
  void show_progress();
  void update_capacity();
  void set_exit_status(int status);

  actor_type* self_ = nullptr;
  runner_config cfg_;
  std::vector<line> lines_;
  /// Input line of each operation id the pool answered.
  std::unordered_map<uint64_t, size_t> line_of_;
  /// Outcomes of operations no line is known for (yet): an adopted
  /// operation may finish before its line is submitted again; what is left
  /// at the end came from a journal with other commands.
  std::unordered_map<uint64_t, pool::pool_event> unclaimed_;
  size_t next_ = 0;
  /// Lines handed to the pool whose outcome is not known yet: at most one
  /// per worker.
  size_t in_flight_ = 0;
  /// Workers the pool has: `-j`, plus those of joined nodes (`--serve`,
  /// looked up every 100 ms).
  size_t capacity_ = 0;
  /// Lines whose outcome is known, waiting for the journal to record it.
  size_t recording_ = 0;
  bool draining_ = false;
  bool ending_ = false;
  bool status_set_ = false;
  std::chrono::steady_clock::time_point started_;
  std::optional<pool::pool_stats> stats_;
  // Counters for the summary and the exit status.
  size_t succeeded_ = 0;
  size_t failed_ = 0;
  size_t skipped_ = 0;
  size_t skipped_failed_ = 0;
  size_t foreign_ = 0;
  size_t retries_ = 0;
  size_t timeouts_ = 0;
};

/// The runner actor; spawn it detached (it writes to stdout, which may
/// block). Sets `cfg.exit_status` and quits when every line is finished,
/// or, after an `interrupt`, when every started command is.
caf::behavior runner(runner_state::actor_type* self, runner_config cfg);

/// The journal key of input line `seq` (0-based): its number and a hash of
/// the command, so an edited line does not match an old record.
std::string journal_key(size_t seq, const std::string& command);

} // namespace poolrun
