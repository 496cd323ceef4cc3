// The runner actor: one command per free worker, outcomes as pool events.
#include "runner.hpp"

#include <algorithm>
#include <cstdio>

#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>

#include <pool/errors.hpp>
#include <pool/protocol.hpp>

#include "type_ids.hpp"

using namespace std::chrono_literals;

namespace poolrun {

namespace {

/// A failure that is not the command's own (the pool stopped, the journal
/// failed): reported like a command that could not run.
job_result not_run(const std::string& command, const caf::error& why) {
  job_result res;
  res.command = command;
  res.exit_code = 255;
  res.err = "poolrun: " + pool::describe(why) + "\n";
  return res;
}

/// The job result a finished operation carries, from its event or record.
std::optional<job_result> result_in(const caf::message& result) {
  if (result.match_elements<job_result>())
    return result.get_as<job_result>(0);
  return std::nullopt;
}

} // namespace

std::string journal_key(size_t seq, const std::string& command) {
  // FNV-1a, 64 bit: stable across builds and machines.
  uint64_t hash = 14695981039346656037ull;
  for (auto c : command) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(hash));
  return "line:" + std::to_string(seq + 1) + ":" + buf;
}

runner_state::~runner_state() {
  // A runner that terminated without finishing: poolrun's own error.
  if (cfg_.exit_status && !status_set_)
    cfg_.exit_status->set_value(255);
}

caf::behavior runner_state::init(actor_type* self, runner_config cfg) {
  self_ = self;
  cfg_ = std::move(cfg);
  lines_.resize(cfg_.commands.size());
  capacity_ = cfg_.options.jobs;
  started_ = std::chrono::steady_clock::now();
  self->monitor(cfg_.pool);
  self->set_down_handler([this](caf::down_msg& msg) {
    if (msg.source == cfg_.pool.address() && !ending_)
      fail_run("the pool stopped: " + pool::describe(msg.reason));
  });
  // Subscribe first, then submit: no outcome is missed.
  auto mask =
      pool::event_mask::outcomes | pool::event_bit(pool::event_kind::retried);
  self->request(cfg_.pool, 10s, pool::subscribe_atom_v,
                caf::actor_cast<caf::actor>(self), mask)
      .then(
          [this] {
            feed();
            check_end();
          },
          [this](caf::error& err) {
            fail_run("cannot subscribe to the pool: " + pool::describe(err));
          });
  if (cfg_.options.bar)
    self->send(self, bar_tick_atom_v);
  if (cfg_.options.serving())
    self->send(self, capacity_atom_v);
  return {
      [this](pool::pool_event& ev) { on_event(ev); },
      // Enqueued operations also report to their submitter; the events
      // carry the same outcomes, for adopted operations too.
      [](pool::op_done_atom, uint64_t, const caf::message&) {},
      [](pool::op_failed_atom, uint64_t, const caf::error&) {},
      [this](interrupt_atom) { interrupt(); },
      [this](bar_tick_atom) {
        if (ending_)
          return;
        show_progress();
        self_->delayed_send(self_, 200ms, bar_tick_atom_v);
      },
      [this](capacity_atom) {
        if (ending_)
          return;
        update_capacity();
        self_->delayed_send(self_, 100ms, capacity_atom_v);
      },
  };
}

// -- feeding the pool ---------------------------------------------------------

void runner_state::feed() {
  // At most one operation per worker: nothing waits in the pool's queue, so
  // after Ctrl-C no command is left there to start.
  while (!draining_ && !ending_ && next_ < lines_.size() &&
         in_flight_ < capacity_)
    submit(next_++);
}

void runner_state::update_capacity() {
  // Joined nodes come and go; the local workers stay. A node lost with
  // commands on it leaves more in flight than workers for a moment: its
  // attempts fail (and are retried with --retries).
  self_->request(cfg_.pool, 10s, pool::pool_stats_atom_v)
      .then(
          [this](pool::pool_stats& st) {
            capacity_ = std::max<size_t>(cfg_.options.jobs,
                                         static_cast<size_t>(st.workers));
            feed();
          },
          [](caf::error&) {
            // The pool's own down message ends the run.
          });
}

void runner_state::submit(size_t seq) {
  ++in_flight_;
  lines_[seq].state = phase::submitted;
  const auto& command = cfg_.commands[seq];
  auto on_id = [this, seq](uint64_t operation) {
    on_submitted(seq, operation);
  };
  auto on_error = [this, seq](caf::error& err) {
    --in_flight_;
    finish_line(seq, not_run(cfg_.commands[seq], err), false, false);
  };
  if (journaled())
    // A finished operation with this key (within the unbounded unique
    // window) or an unfinished one answers with its id; nothing is added.
    self_
        ->request(cfg_.pool, caf::infinite, pool::enqueue_unique_atom_v,
                  journal_key(seq, command), command)
        .then(on_id, on_error);
  else
    self_->request(cfg_.pool, caf::infinite, pool::enqueue_atom_v, command)
        .then(on_id, on_error);
}

void runner_state::on_submitted(size_t seq, uint64_t operation) {
  auto& ln = lines_[seq];
  ln.operation = operation;
  ln.state = phase::running;
  line_of_[operation] = seq;
  if (auto i = unclaimed_.find(operation); i != unclaimed_.end()) {
    // An adopted operation that finished before its line came up.
    auto ev = std::move(i->second);
    unclaimed_.erase(i);
    on_outcome(seq, ev);
    return;
  }
  if (!journaled())
    return;
  // The id may name an operation finished in an earlier run. Its record
  // says so; an operation finishing now sends its event before the
  // shepherd can answer with a finished record.
  self_->request(cfg_.pool, caf::infinite, pool::op_status_atom_v, operation)
      .then(
          [this, seq, operation](pool::operation_record& rec) {
            on_status(seq, operation, rec);
          },
          [](caf::error&) {
            // Then its event will tell.
          });
}

void runner_state::on_status(size_t seq, uint64_t operation,
                             const pool::operation_record& rec) {
  auto& ln = lines_[seq];
  if (ln.state != phase::running || ln.operation != operation)
    return; // Its event came first: it finished in this run.
  if (rec.state == pool::operation_state::done ||
      rec.state == pool::operation_state::failed)
    finished_earlier(seq, rec);
  // Queued or running: new, or adopted from the journal; its event follows.
}

// -- outcomes -----------------------------------------------------------------

void runner_state::on_event(pool::pool_event& ev) {
  switch (ev.kind) {
    case pool::event_kind::retried: {
      ++retries_;
      auto res = result_of(ev.error);
      if (res && res->timed_out)
        ++timeouts_;
      return;
    }
    case pool::event_kind::completed:
    case pool::event_kind::failed:
      break;
    default:
      return;
  }
  auto i = line_of_.find(ev.operation);
  if (i == line_of_.end()) {
    unclaimed_.emplace(ev.operation, std::move(ev));
    return;
  }
  if (lines_[i->second].state == phase::running)
    on_outcome(i->second, ev);
}

void runner_state::on_outcome(size_t seq, const pool::pool_event& ev) {
  auto& ln = lines_[seq];
  ln.state = phase::recording;
  --in_flight_; // its worker is free: the next line may go
  std::optional<job_result> res;
  auto succeeded = ev.kind == pool::event_kind::completed;
  auto cancelled = false;
  if (succeeded) {
    res = result_in(ev.result);
  } else {
    res = result_of(ev.error);
    cancelled = pool::is(ev.error, pool::pool_errc::cancelled);
    if (!res && !cancelled)
      res = not_run(cfg_.commands[seq], ev.error);
  }
  if (!journaled()) {
    finish_line(seq, std::move(res), succeeded, cancelled);
    return;
  }
  // Print only once the journal has the outcome: a command whose output was
  // printed never runs again on resume. A status lookup of a finished
  // operation is answered after the store committed what came before it.
  ++recording_;
  auto done = [this, seq, res, succeeded, cancelled] {
    --recording_;
    finish_line(seq, res, succeeded, cancelled);
  };
  feed();
  self_->request(cfg_.pool, caf::infinite, pool::op_status_atom_v, ev.operation)
      .then([done](pool::operation_record&) { done(); },
            [done](caf::error&) { done(); });
}

void runner_state::finish_line(size_t seq, std::optional<job_result> res,
                               bool succeeded, bool cancelled) {
  lines_[seq].state = phase::finished;
  if (cancelled)
    res.reset();
  else
    ++(succeeded ? succeeded_ : failed_);
  if (res) {
    if (res->timed_out)
      ++timeouts_;
    cfg_.out->joblog(seq, *res);
  }
  show_progress();
  cfg_.out->finished(seq, std::move(res));
  feed();
  check_end();
}

void runner_state::finished_earlier(size_t seq,
                                    const pool::operation_record& rec) {
  lines_[seq].state = phase::finished;
  --in_flight_;
  ++skipped_;
  std::optional<job_result> res;
  if (rec.state == pool::operation_state::failed) {
    // Still failed: the exit status covers the whole job list.
    ++skipped_failed_;
    res = result_of(rec.error);
  } else {
    res = result_in(rec.result);
  }
  if (!cfg_.options.replay)
    res.reset();
  show_progress();
  cfg_.out->finished(seq, std::move(res));
  feed();
  check_end();
}

// -- the end ------------------------------------------------------------------

void runner_state::interrupt() {
  if (draining_ || ending_)
    return;
  draining_ = true;
  cfg_.out->message("interrupted: no new commands start; waiting for " +
                    std::to_string(in_flight_) +
                    " running (press Ctrl-C again to kill them)");
  check_end();
}

void runner_state::check_end() {
  if (ending_ || in_flight_ > 0 || recording_ > 0)
    return;
  if (!draining_ && next_ < lines_.size())
    return;
  ending_ = true;
  self_->request(cfg_.pool, 10s, pool::pool_stats_atom_v)
      .then(
          [this](pool::pool_stats& st) {
            stats_ = st;
            close_pool();
          },
          [this](caf::error&) { close_pool(); });
}

void runner_state::close_pool() {
  if (draining_) {
    // Interrupted: stop without draining, which would start work still in
    // the queue (adopted from a journal). Unfinished work stays journaled.
    self_->send_exit(cfg_.pool, caf::exit_reason::user_shutdown);
    finish();
    return;
  }
  // Drain: adopted operations of other command lines finish, and a durable
  // pool has recorded every outcome before it answers.
  self_->request(cfg_.pool, caf::infinite, pool::drain_atom_v)
      .then([this] { finish(); },
            [this](caf::error& err) {
              cfg_.out->message("stopping the pool: " + pool::describe(err));
              finish();
            });
}

void runner_state::finish() {
  auto& out = *cfg_.out;
  out.flush_held();
  // Outcomes of journaled operations that no input line claimed: they ran
  // (adopted) but belong to another command list.
  for (auto& kvp : unclaimed_) {
    auto& ev = kvp.second;
    ++foreign_;
    std::optional<job_result> res;
    if (ev.kind == pool::event_kind::completed) {
      res = result_in(ev.result);
    } else if (!pool::is(ev.error, pool::pool_errc::cancelled)) {
      ++failed_;
      res = result_of(ev.error);
    }
    if (res)
      out.finished(lines_.size() + foreign_, std::move(res));
  }
  out.flush_held();
  if (foreign_ > 0)
    out.message(std::to_string(foreign_) +
                " unfinished commands from the journal were not in this "
                "input; they ran too");
  out.end_progress();
  auto failed = failed_ + skipped_failed_;
  if (cfg_.options.summary || cfg_.options.bar) {
    auto wall = std::chrono::steady_clock::now() - started_;
    std::string text = std::to_string(lines_.size()) + " commands in " +
                       human_duration(wall) + ": " +
                       std::to_string(succeeded_) + " succeeded, " +
                       std::to_string(failed) + " failed";
    if (skipped_ > 0)
      text += " (" + std::to_string(skipped_) +
              " finished in an earlier run, " +
              std::to_string(skipped_failed_) + " of them failed)";
    auto not_started = lines_.size() - std::min(next_, lines_.size());
    if (not_started > 0)
      text += ", " + std::to_string(not_started) + " not started";
    text += "; " + std::to_string(retries_) + " retried, " +
            std::to_string(timeouts_) + " timed out";
    if (stats_ && stats_->processing.count > 0)
      text += "; job time p50 " + human_duration(stats_->processing.p50) +
              ", p99 " + human_duration(stats_->processing.p99);
    out.message(text);
  }
  set_exit_status(static_cast<int>(std::min<size_t>(failed, 101)));
  self_->quit();
}

void runner_state::fail_run(const std::string& why) {
  if (ending_)
    return;
  ending_ = true;
  cfg_.out->flush_held();
  cfg_.out->end_progress();
  cfg_.out->message(why);
  set_exit_status(255);
  self_->quit();
}

void runner_state::show_progress() {
  progress p;
  p.total = lines_.size();
  p.finished = succeeded_ + failed_ + skipped_;
  p.failed = failed_ + skipped_failed_;
  p.running = in_flight_;
  p.elapsed = std::chrono::steady_clock::now() - started_;
  cfg_.out->show(p);
}

void runner_state::set_exit_status(int status) {
  if (status_set_)
    return;
  status_set_ = true;
  cfg_.exit_status->set_value(status);
}

caf::behavior runner(runner_state::actor_type* self, runner_config cfg) {
  return self->state.init(self, std::move(cfg));
}

} // namespace poolrun
