// The runner actor: takes jobs from the feeder, hands them to the pool,
// reports outcomes, halts, resumes, and ends the run.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
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

#include "command_template.hpp"
#include "feeder.hpp"
#include "halt.hpp"
#include "joblog.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "reporter.hpp"
#include "slots.hpp"

namespace poolrun {

/// What the runner needs; moved into it at spawn.
struct runner_config {
  run_options options;
  /// The pool (a shepherd of dedicated workers running `execute`).
  caf::actor pool;
  std::shared_ptr<feeder> input;
  std::shared_ptr<slot_table> slots;
  /// Jobs the pool runs at once (its workers).
  size_t workers = 1;
  /// --resume / --resume-failed: the joblog as it was.
  std::shared_ptr<joblog_record> resume;
  /// Receives poolrun's exit status once, when the runner is done.
  std::shared_ptr<std::promise<int>> exit_status;
};

/// The runner's state; see `runner`.
struct runner_state {
  static inline const char* name = "poolrun.runner";

  using actor_type = caf::stateful_actor<runner_state>;

  runner_state() = default;
  ~runner_state();

  caf::behavior init(actor_type* self, runner_config cfg);

private:
  /// A job handed to the pool.
  struct running_job {
    pending_job job;
    /// Journaled: its operation, once the pool named it.
    std::optional<uint64_t> operation;
    /// Journaled: its outcome is known; waiting for the journal to commit.
    bool recording = false;
  };

  /// Whether a job's start order may show: its slot number ({%} in its
  /// command, tag or templates, --tagstring, --process-slot-var) or the
  /// order of --timeout's kills. Only such a job waits for its turn in
  /// start order for a slot (slot_table::announce), which costs a plain
  /// job up to a job's time when workers take jobs out of order (+22 %
  /// per `true` command at -j2, measured).
  bool uses_slot(const job_spec& x) const {
    auto in = [](const std::string& s) {
      return s.find(slot_mark) != std::string::npos;
    };
    return !cfg_.options.slot_var.empty() || !cfg_.options.tagstring.empty()
           || cfg_.options.timeout || in(x.command) || in(x.tag)
           || std::any_of(x.template_names.begin(), x.template_names.end(), in)
           || std::any_of(x.template_contents.begin(),
                          x.template_contents.end(), in);
  }

  /// With a journal or a shared queue: unique submits, outcomes as events.
  bool journaled() const {
    return !cfg_.options.journal.empty() || !cfg_.options.queue.empty();
  }

  // intake and submission (runner.cpp)
  void on_feed(std::vector<pending_job>& jobs);
  void on_feed_end(uint64_t total, std::string& error);
  void pump();
  void submit(pending_job job);
  /// skip() in a perl expression: not run; as GNU parallel, a failure
  /// with Exitval -2 (runner_journal.cpp, with the other records).
  void record_skipped(pending_job job);
  void outcome(uint64_t seq, std::optional<job_result> res,
               const caf::error& err);
  void complete(running_job& entry, std::optional<job_result> res,
                const caf::error& err);

  // the journal (runner_journal.cpp)
  void submit_journaled(uint64_t seq);
  bool resubmit_later(uint64_t seq, const caf::error& err);
  /// --queue: the database is out of reach (a read says so); past
  /// `--queue-outage`, the run stops with poolrun's error.
  void out_of_reach();
  void probe_queue();
  void out_of_reach_too_long();
  void resubmit(uint64_t seq);
  void on_operation(uint64_t seq, uint64_t operation);
  void on_event(pool::pool_event& ev);
  void on_journal_outcome(uint64_t seq, const pool::pool_event& ev);
  void query_commit();
  void finished_earlier(uint64_t seq, const pool::operation_record& rec);
  void report_foreign();
  void finished_elsewhere(uint64_t operation, const caf::error* failure);
  void watch(uint64_t operation);
  void watch_round();

  // stopping and the end (runner.cpp)
  void interrupt();
  void halt_now();
  void stop_starting_jobs();
  void check_end();
  void close_pool();
  void finish();
  void fail_run(const std::string& why);
  progress_figures figures() const;
  /// --delay: whether the next job may go to the pool now (then the one
  /// after it waits `delay`); else a pace timer is set.
  bool paced();

  actor_type* self_ = nullptr;
  runner_config cfg_;
  std::unique_ptr<reporter> out_;
  std::unique_ptr<progress_display> progress_;
  halt_policy halt_;
  std::deque<pending_job> queue_;
  std::unordered_map<uint64_t, running_job> running_;
  /// Journaled: the job of each operation id, and outcomes of operations
  /// no job is known for (yet): adopted from an earlier run.
  std::unordered_map<uint64_t, uint64_t> seq_of_;
  std::unordered_map<uint64_t, pool::pool_event> unclaimed_;
  size_t recording_ = 0;
  /// Journaled outcomes waiting for one status lookup to show them
  /// committed; whether a lookup is out; the operation it will ask for.
  struct recorded_outcome {
    uint64_t seq;
    std::optional<job_result> res;
    caf::error err;
  };
  std::vector<recorded_outcome> awaiting_commit_;
  /// --queue: the queue could not say that `batch` is recorded (its
  /// database stayed out of reach): nothing printed, poolrun's error.
  void unrecorded(std::vector<recorded_outcome>& batch);
  bool commit_query_ = false;
  uint64_t latest_outcome_ = 0;
  bool feed_done_ = false;
  uint64_t total_ = 0;
  /// Waiting for the whole input before starting (--halt N%, --eta, --bar).
  bool wait_for_total_ = false;
  bool stopping_ = false;
  /// --delay: jobs go to the pool one at a time, `delay` apart, in input
  /// order (workers that waited for their turn would race for it).
  std::chrono::steady_clock::time_point next_submit_;
  bool pace_scheduled_ = false;
  bool interrupted_ = false;
  bool halted_now_ = false;
  bool ending_ = false;
  bool status_set_ = false;
  std::chrono::steady_clock::time_point started_;
  // Counters.
  size_t succeeded_ = 0;
  size_t failed_ = 0;
  size_t started_jobs_ = 0;
  size_t skipped_ = 0;
  size_t skipped_failed_ = 0;
  size_t not_run_ = 0;
  size_t retries_ = 0;
  /// Attempt outcomes received (results and retries): while stopping, the
  /// run ends once every attempt that ended has reported.
  uint64_t reported_ = 0;
  size_t foreign_ = 0;
  /// --queue: jobs of this input that another poolrun ran, and how many
  /// of them failed.
  size_t elsewhere_ = 0;
  size_t elsewhere_failed_ = 0;
  /// --queue: operations of this input that another poolrun claimed (or
  /// may claim): their outcome is read from the queue, a few at a time.
  std::deque<uint64_t> watched_;
  bool watch_scheduled_ = false;
  /// poolrun's own errors (bad input, unreadable input): exit 255.
  size_t own_errors_ = 0;
  /// --queue: since when the queue refuses submits or reads records it
  /// cannot read (its database is out of reach); none while it can.
  std::optional<std::chrono::steady_clock::time_point> refused_since_;
  size_t resubmits_ = 0;
  std::chrono::steady_clock::time_point last_probe_;
  /// While stopping: since when only outcomes waiting for the journal or
  /// the queue to record them keep the run going.
  std::optional<std::chrono::steady_clock::time_point> recording_since_;
};

/// The runner actor; spawn it detached (it writes to standard output, which
/// may block). Sets `cfg.exit_status` and quits when every job is done, or
/// after an interrupt or --halt when every started command is.
caf::behavior runner(runner_state::actor_type* self, runner_config cfg);

/// The journal key of job `seq`: its number and a hash of its command, so
/// an edited input line does not match an old record.
std::string journal_key(uint64_t seq, const std::string& command);

} // namespace poolrun
