// The runner actor: the feeder's jobs into the pool, outcomes out.
#include "runner.hpp"

#include <algorithm>
#include <csignal>

#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>

#include <pool/errors.hpp>
#include <pool/work_record.hpp>
#include <pool/protocol.hpp>

#include "console.hpp"
#include "process.hpp"
#include "type_ids.hpp"

using namespace std::chrono_literals;

namespace poolrun {

namespace {

/// Jobs in the pool per worker: one running, one waiting, so a worker
/// whose command ends starts the next at once.
constexpr size_t jobs_per_worker = 2;

/// With a journal each job passes through the store (enqueue, status,
/// outcome, each acknowledged after a commit): more of them in flight
/// keep the workers busy (measured: 4 per worker, 1.3-1.4x the time
/// without a journal; 16, 1.1-1.3x).
constexpr size_t journaled_jobs_per_worker = 16;

/// While stopping, how long the run waits for outcomes to be recorded
/// once no command runs.
constexpr auto stop_grace = std::chrono::seconds(10);

/// A failure that is not the command's own (the pool stopped): reported
/// like a command that could not run.
job_result not_run(const pending_job& job, const caf::error& why) {
  job_result res;
  res.command = job.spec.command;
  res.exit_code = 255;
  res.err = console::prefix() + pool::describe(why) + "\n";
  return res;
}

/// --queue: an operation whose every attempt ran in a poolrun that died
/// (its lease was taken back): the command was killed with it, a failure
/// of the command, not poolrun's own error.
std::optional<job_result> died_with_its_poolrun(const pending_job& job,
                                                const caf::error& why) {
  auto history = pool::attempt_history(why);
  if (history.empty())
    return std::nullopt;
  for (auto& x : history)
    if (!pool::is(x.reason, pool::pool_errc::lease_lost))
      return std::nullopt;
  job_result res;
  res.command = job.spec.command;
  res.signal = SIGKILL;
  res.err = console::prefix() + "it ran in a poolrun that died: " +
            pool::describe(history.back().reason) + "\n";
  return res;
}

} // namespace

runner_state::~runner_state() {
  // A runner that terminated without finishing: poolrun's own error.
  if (cfg_.exit_status && !status_set_)
    cfg_.exit_status->set_value(own_error);
}

caf::behavior runner_state::init(actor_type* self, runner_config cfg) {
  self_ = self;
  cfg_ = std::move(cfg);
  out_ = std::make_unique<reporter>(cfg_.options);
  progress_ = std::make_unique<progress_display>(cfg_.options);
  halt_ = halt_policy{cfg_.options.halt};
  started_ = std::chrono::steady_clock::now();
  auto& o = cfg_.options;
  wait_for_total_ = (o.halt.on != halt_spec::when::never && o.halt.percent) ||
                    o.eta || o.bar;
  if (auto err = out_->open_joblog(o.resume || o.resume_failed ||
                                   o.joblog_append || !o.journal.empty());
      !err.empty()) {
    fail_run(err);
    return {};
  }
  if (cfg_.pool) {
    self->monitor(cfg_.pool);
    self->set_down_handler([this](caf::down_msg& msg) {
      if (msg.source != cfg_.pool.address())
        return;
      if (stopping_ && ending_) {
        // Stopped on purpose: parked jobs may return now, to no one.
        release_parked();
        finish();
      } else if (!ending_) {
        fail_run("the pool stopped: " + pool::describe(msg.reason));
      }
    });
    // Outcomes of journaled operations (adopted ones too) and retries come
    // as events; subscribe before submitting anything.
    auto mask = pool::event_bit(pool::event_kind::retried);
    if (journaled())
      mask |= pool::event_mask::outcomes;
    self->request(cfg_.pool, 10s, pool::subscribe_atom_v,
                  caf::actor_cast<caf::actor>(self), mask)
        .then([this] { cfg_.input->start(caf::actor_cast<caf::actor>(self_)); },
              [this](caf::error& err) {
                fail_run("cannot subscribe to the pool: " +
                         pool::describe(err));
              });
  } else {
    cfg_.input->start(caf::actor_cast<caf::actor>(self)); // --dry-run
  }
  if (progress_->enabled())
    self->send(self, bar_tick_atom_v);
  return {
      [this](feed_atom, std::vector<pending_job>& jobs) { on_feed(jobs); },
      [this](feed_end_atom, uint64_t total, std::string& error) {
        on_feed_end(total, error);
      },
      [this](pool::pool_event& ev) { on_event(ev); },
      // Enqueued operations also report to their submitter; the events
      // carry the same outcomes, for adopted operations too. With --queue,
      // a report without an event is a job another poolrun ran.
      [this](pool::op_done_atom, uint64_t id, const caf::message&) {
        finished_elsewhere(id, nullptr);
      },
      [this](pool::op_failed_atom, uint64_t id, const caf::error& err) {
        finished_elsewhere(id, &err);
      },
      [this](interrupt_atom) { interrupt(); },
      [this](bar_tick_atom) {
        if (ending_)
          return;
        progress_->tick(figures());
        self_->delayed_send(self_, 200ms, bar_tick_atom_v);
      },
      [this](settle_atom) { check_end(); },
      [this](pace_atom) {
        pace_scheduled_ = false;
        pump();
        check_end();
      },
      [this](watch_atom) { watch_round(); },
      [this](resubmit_atom, uint64_t seq) { resubmit(seq); },
      [this](recheck_atom) {
        if (!commit_query_ && !awaiting_commit_.empty())
          query_commit();
      },
      [this](halt_kill_atom) {
        signal_all_commands(SIGKILL);
        if (cfg_.slots)
          cfg_.slots->signal_remote(SIGKILL);
        check_end();
      },
  };
}

// -- intake ---------------------------------------------------------------------

void runner_state::on_feed(std::vector<pending_job>& jobs) {
  for (auto& job : jobs)
    queue_.push_back(std::move(job));
  pump();
}

void runner_state::on_feed_end(uint64_t total, std::string& error) {
  feed_done_ = true;
  total_ = total;
  if (cfg_.pool) // the page and pooltop show done of total, and an ETA
    self_->send(cfg_.pool, pool::expect_total_atom_v, total);
  if (!error.empty()) {
    ++own_errors_;
    console::message(error);
  }
  pump();
  check_end();
}

void runner_state::pump() {
  if (wait_for_total_ && !feed_done_)
    return;
  auto& o = cfg_.options;
  size_t taken = 0;
  // With --halt, no job waits in the pool: as GNU parallel, none starts
  // after the one that meets the condition.
  // Jobs whose outcome waits only for the journal hold no worker.
  auto per_worker = o.halt.on != halt_spec::when::never ? size_t{1}
                    : journaled()                      ? journaled_jobs_per_worker
                                                       : jobs_per_worker;
  while (!stopping_ && !queue_.empty() &&
         running_.size() - recording_ < cfg_.workers * per_worker) {
    auto job = std::move(queue_.front());
    queue_.pop_front();
    ++taken;
    auto seq = job.spec.seq;
    if (!job.error.empty()) {
      ++own_errors_;
      ++not_run_;
      console::message(job.error);
      out_->finished(job, std::nullopt, false);
      continue;
    }
    if (cfg_.resume) {
      auto state = cfg_.resume->of(seq);
      if ((o.resume && state != joblog_record::unknown) ||
          (o.resume_failed && state == joblog_record::succeeded)) {
        ++skipped_;
        out_->finished(job, std::nullopt, false);
        continue;
      }
    }
    if (job.skip) {
      record_skipped(std::move(job));
      continue;
    }
    if (o.dry_run) {
      out_->dry_run(job, cfg_.workers);
      continue;
    }
    if (o.delay > caf::timespan::zero() && !paced()) {
      queue_.push_front(std::move(job));
      --taken;
      break;
    }
    submit(std::move(job));
  }
  if (taken > 0)
    cfg_.input->consumed(taken);
  check_end();
}

bool runner_state::paced() {
  auto now = std::chrono::steady_clock::now();
  if (now >= next_submit_) {
    next_submit_ = now + cfg_.options.delay;
    return true;
  }
  if (!pace_scheduled_) {
    pace_scheduled_ = true;
    self_->delayed_send(self_, next_submit_ - now, pace_atom_v);
  }
  return false;
}

void runner_state::submit(pending_job job) {
  auto seq = job.spec.seq;
  ++started_jobs_;
  // -t: in input order, as GNU parallel starts them (workers would race);
  // a command with {%} is printed by its worker, which knows the slot.
  if (cfg_.options.trace_command &&
      job.spec.command.find(slot_mark) == std::string::npos)
    console::write(2, job.spec.command + "\n");
  auto& entry = running_[seq];
  entry.job = std::move(job);
  if (cfg_.slots && !journaled() && uses_slot(entry.job.spec))
    cfg_.slots->announce(seq); // {%} by start order
  if (journaled()) {
    submit_journaled(seq);
    return;
  }
  self_->request(cfg_.pool, caf::infinite, pool::submit_atom_v, entry.job.spec)
      .then(
          [this, seq](job_result& res) {
            ++reported_;
            outcome(seq, std::move(res), caf::error{});
          },
          [this, seq](caf::error& err) {
            ++reported_;
            outcome(seq, result_of(err), err);
          });
}

// -- outcomes -------------------------------------------------------------------

void runner_state::outcome(uint64_t seq, std::optional<job_result> res,
                           const caf::error& err) {
  auto i = running_.find(seq);
  if (i == running_.end())
    return;
  if (cfg_.slots)
    cfg_.slots->forget(seq);
  if (ending_) {
    // Parked when the run stopped; the pool ended it unstarted.
    running_.erase(i);
    return;
  }
  complete(i->second, std::move(res), err);
  running_.erase(i);
  pump();
  check_end();
}

void runner_state::complete(running_job& entry, std::optional<job_result> res,
                            const caf::error& err) {
  auto& job = entry.job;
  if (halted_now_) {
    // Killed by --halt now: GNU parallel neither prints nor logs it.
    out_->finished(job, std::nullopt, false);
    return;
  }
  if (err && err.category() == caf::atom("poolrun") &&
      err.code() == static_cast<uint8_t>(poolrun_errc::not_started)) {
    ++not_run_;
    out_->finished(job, std::nullopt, false);
    return;
  }
  if (!res)
    res = died_with_its_poolrun(job, err);
  if (!res) {
    // The pool's own failure (it stopped, the journal broke).
    ++own_errors_;
    res = not_run(job, err);
  }
  bool failed = res->failed();
  ++(failed ? failed_ : succeeded_);
  bool was_halted = halt_.halted();
  auto action = halt_.finished(failed, res->exit_code, res->signal,
                               feed_done_ ? total_ : 0);
  // As GNU parallel: the job that halts the run is named, and with `soon`
  // every later one of the same kind.
  std::string named; // after the job's output, as GNU parallel
  if (action != halt_policy::action::none ||
      (was_halted && halt_.matches(failed)))
    named = halt_.reason(failed) + ":\n" + res->command;
  out_->finished(job, std::move(res));
  if (!named.empty())
    console::message(named);
  if (action == halt_policy::action::soon) {
    if (running_.size() > 1)
      console::message("Starting no more jobs. Waiting for " +
                       std::to_string(running_.size() - 1) +
                       " jobs to finish.");
    stop_starting_jobs();
  } else if (action == halt_policy::action::now) {
    halt_now();
  }
}

// -- stopping -------------------------------------------------------------------

void runner_state::stop_starting_jobs() {
  if (stopping_)
    return;
  stopping_ = true;
  stop_starting();
  cfg_.input->stop();
  for (auto& job : queue_)
    out_->finished(job, std::nullopt, false);
  queue_.clear();
}

void runner_state::interrupt() {
  if (stopping_ || ending_)
    return;
  interrupted_ = true;
  console::message("interrupted: no new commands start; waiting for " +
                   std::to_string(attempts_running()) +
                   " running (press Ctrl-C again to kill them)");
  stop_starting_jobs();
  check_end();
}

void runner_state::halt_now() {
  stop_starting_jobs();
  halted_now_ = true;
  signal_all_commands(SIGTERM);
  if (cfg_.slots)
    cfg_.slots->signal_remote(SIGTERM);
  // What ignores SIGTERM gets SIGKILL a little later.
  self_->delayed_send(self_, 200ms, halt_kill_atom_v);
}

void runner_state::check_end() {
  if (ending_)
    return;
  if (stopping_) {
    // No command runs, and the outcome of each that ran is here (jobs
    // still in the pool wait parked, or never start).
    if (attempts_running() > 0 || attempts_ended() > reported_) {
      self_->delayed_send(self_, 20ms, settle_atom_v);
      return;
    }
    // ... and recorded, unless the journal or the queue does not answer
    // for a while (a database out of reach): then they run again on
    // resume, and the run ends all the same.
    if (recording_ > 0 || commit_query_) {
      auto now = std::chrono::steady_clock::now();
      if (!recording_since_)
        recording_since_ = now;
      if (now - *recording_since_ < stop_grace) {
        self_->delayed_send(self_, 20ms, settle_atom_v);
        return;
      }
      console::message(std::to_string(recording_) +
                       " outcomes were not recorded (the store does not "
                       "answer); they count as run, and a resume with "
                       "--retries runs them again");
    }
  } else if (!feed_done_ || !queue_.empty() || !running_.empty() ||
             recording_ > 0) {
    return;
  }
  ending_ = true;
  close_pool();
}

void runner_state::close_pool() {
  if (!cfg_.pool) {
    finish();
    return;
  }
  if (stopping_) {
    // Stop without draining: queued (and parked) jobs must not start; the
    // journal keeps them unfinished. The down handler finishes.
    self_->send_exit(cfg_.pool, caf::exit_reason::user_shutdown);
    return;
  }
  // Drain: adopted operations finish, and a durable pool has recorded
  // every outcome before it answers.
  self_->request(cfg_.pool, caf::infinite, pool::drain_atom_v)
      .then([this] { finish(); },
            [this](caf::error& err) {
              console::message("stopping the pool: " + pool::describe(err));
              finish();
            });
}

progress_figures runner_state::figures() const {
  progress_figures f;
  f.total = feed_done_ ? total_ : 0;
  f.done = succeeded_ + failed_ + skipped_ + not_run_ + elsewhere_;
  f.failed = failed_ + skipped_failed_ + elsewhere_failed_;
  // Commands running now, not the jobs handed ahead to the pool (at -j2
  // up to 4 of those).
  f.running = std::min(running_.size(), attempts_running());
  f.elapsed = std::chrono::steady_clock::now() - started_;
  return f;
}

void runner_state::finish() {
  if (status_set_)
    return;
  out_->flush_held();
  report_foreign();
  out_->flush_held();
  progress_->end(figures());
  auto failed = failed_ + skipped_failed_;
  auto& o = cfg_.options;
  if (o.summary) {
    auto wall = std::chrono::steady_clock::now() - started_;
    std::string text = std::to_string(started_jobs_ + skipped_) + " jobs in " +
                       human_duration(wall) + ": " +
                       std::to_string(succeeded_) + " succeeded, " +
                       std::to_string(failed) + " failed";
    if (skipped_ > 0)
      text += " (" + std::to_string(skipped_) + " done in an earlier run, " +
              std::to_string(skipped_failed_) + " of them failed)";
    if (elsewhere_ > 0)
      text += ", " + std::to_string(elsewhere_) + " ran elsewhere (" +
              std::to_string(elsewhere_failed_) + " failed)";
    if (not_run_ > 0)
      text += ", " + std::to_string(not_run_) + " not run";
    text += "; " + std::to_string(retries_) + " retried";
    console::message(text);
  }
  int status = halt_.exit_status(started_jobs_);
  // The exit status covers the whole job list, wherever a job ran.
  failed += elsewhere_failed_;
  if ((skipped_failed_ > 0 || elsewhere_failed_ > 0) && !halt_.halted())
    status = static_cast<int>(std::min<size_t>(failed, 101));
  if (own_errors_ > 0 || out_->lost_outputs() > 0)
    status = own_error;
  status_set_ = true;
  cfg_.exit_status->set_value(status);
  self_->quit();
}

void runner_state::fail_run(const std::string& why) {
  if (status_set_)
    return;
  ending_ = true;
  out_->flush_held();
  progress_->end(figures());
  console::message(why);
  status_set_ = true;
  cfg_.exit_status->set_value(own_error);
  self_->quit();
}

caf::behavior runner(runner_state::actor_type* self, runner_config cfg) {
  return self->state.init(self, std::move(cfg));
}

} // namespace poolrun
