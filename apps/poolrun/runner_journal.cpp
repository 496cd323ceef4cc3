// The runner's journal side: unique submits, outcomes as events, jobs
// finished in an earlier run, adopted operations of other inputs.
#include "runner.hpp"

#include <chrono>
#include <cstdio>
#include <limits>

#include <caf/event_based_actor.hpp>

#include <pool/errors.hpp>
#include <pool/protocol.hpp>

#include "console.hpp"
#include "type_ids.hpp"

namespace poolrun {

namespace {

/// --queue: how often, and how many records at a time, the runner reads
/// of jobs that run elsewhere.
constexpr auto watch_interval = std::chrono::milliseconds(250);
constexpr size_t watch_batch = 200;

/// --queue: how long the runner submits again what the queue refuses
/// while its database is out of reach, waits for the queue to say that
/// outcomes are recorded, or reads only unreadable records: a little
/// longer than the pool itself waits for it (`--queue-outage`, its
/// `pg_options::outage_limit`).
caf::timespan queue_patience(const run_options& o) {
  return o.queue_outage + std::chrono::seconds(5);
}

/// ... and how soon it submits again.
constexpr auto resubmit_delay = std::chrono::seconds(1);

/// Whether `rec` is what the queue answers while its database is out of
/// reach (not known to be finished, with the reason).
bool unreadable(const pool::operation_record& rec) {
  return rec.state == pool::operation_state::queued
         && static_cast<bool>(rec.error);
}

/// The job result a finished operation carries, from its event or record.
std::optional<job_result> result_in(const caf::message& result) {
  if (result.match_elements<job_result>())
    return result.get_as<job_result>(0);
  return std::nullopt;
}

} // namespace

std::string journal_key(uint64_t seq, const std::string& command) {
  // FNV-1a, 64 bit: stable across builds and machines.
  uint64_t hash = 14695981039346656037ull;
  for (auto c : command) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(hash));
  return "line:" + std::to_string(seq) + ":" + buf;
}

void runner_state::submit_journaled(uint64_t seq) {
  auto& spec = running_[seq].job.spec;
  // A finished operation with this key (within the unbounded unique
  // window) or an unfinished one answers with its id; nothing is added.
  self_
      ->request(cfg_.pool, caf::infinite, pool::enqueue_unique_atom_v,
                journal_key(seq, spec.command), spec)
      .then(
          [this, seq](uint64_t operation) {
            refused_since_.reset();
            on_operation(seq, operation);
          },
          [this, seq](caf::error& err) {
            if (!resubmit_later(seq, err))
              outcome(seq, std::nullopt, err);
          });
}

bool runner_state::resubmit_later(uint64_t seq, const caf::error& err) {
  // --queue: while its database is out of reach (a restart, a failover),
  // the queue refuses a unique submit, whose key it cannot check. It goes
  // again until the database is back, for as long as the pool waits for
  // it; after that (or once the pool gave up), the run stops: resume it
  // with the same command line.
  if (cfg_.options.queue.empty() || stopping_ || ending_
      || (!pool::is(err, pool::pool_errc::store_failed)
          && !pool::is(err, pool::pool_errc::lease_lost)))
    return false;
  auto now = std::chrono::steady_clock::now();
  if (!refused_since_)
    refused_since_ = now;
  auto gave_up = pool::describe(err).find("outage_limit") != std::string::npos;
  if (gave_up || now - *refused_since_ > queue_patience(cfg_.options)) {
    out_of_reach_too_long();
    return false;
  }
  ++resubmits_;
  self_->delayed_send(self_, resubmit_delay, resubmit_atom_v, seq);
  return true;
}

void runner_state::probe_queue() {
  // The pool answers for the operations it holds from memory, so a
  // database out of reach shows only in a read of the store: every second,
  // the record of an id that no operation has (the store's ids count up
  // from blocks of 2^32).
  auto now = std::chrono::steady_clock::now();
  if (now - last_probe_ < std::chrono::seconds(1))
    return;
  last_probe_ = now;
  self_->request(cfg_.pool, queue_patience(cfg_.options), pool::op_status_atom_v,
                 std::numeric_limits<uint64_t>::max())
      .then(
          [this](pool::operation_record& rec) {
            if (unreadable(rec))
              out_of_reach();
          },
          [this](caf::error& err) {
            if (err == caf::sec::request_timeout)
              out_of_reach();
            else
              refused_since_.reset(); // read: no such operation
          });
}

void runner_state::out_of_reach() {
  auto now = std::chrono::steady_clock::now();
  if (!refused_since_)
    refused_since_ = now;
  else if (now - *refused_since_ > queue_patience(cfg_.options)) {
    out_of_reach_too_long();
    check_end();
  }
}

void runner_state::out_of_reach_too_long() {
  if (stopping_ || ending_)
    return;
  console::message("the queue's database has been out of reach for longer "
                   "than --queue-outage; stopping (run the same command "
                   "line again to resume)");
  ++own_errors_;
  stop_starting_jobs();
}

void runner_state::resubmit(uint64_t seq) {
  auto i = running_.find(seq);
  if (i == running_.end())
    return;
  if (!stopping_ && !ending_) {
    submit_journaled(seq);
    return;
  }
  // Stopped meanwhile: it never ran.
  --started_jobs_;
  ++not_run_;
  out_->finished(i->second.job, std::nullopt, false);
  running_.erase(i);
  check_end();
}

void runner_state::on_operation(uint64_t seq, uint64_t operation) {
  auto i = running_.find(seq);
  if (i == running_.end())
    return;
  i->second.operation = operation;
  seq_of_[operation] = seq;
  if (auto u = unclaimed_.find(operation); u != unclaimed_.end()) {
    // An adopted operation that finished before its job came up.
    auto ev = std::move(u->second);
    unclaimed_.erase(u);
    on_journal_outcome(seq, ev);
    return;
  }
  // The id may name an operation finished in an earlier run. Its record
  // says so; an operation finishing now sends its event before the
  // shepherd can answer with a finished record.
  self_->request(cfg_.pool, caf::infinite, pool::op_status_atom_v, operation)
      .then(
          [this, seq, operation](pool::operation_record& rec) {
            auto j = running_.find(seq);
            if (j == running_.end() || j->second.recording ||
                j->second.operation != operation)
              return; // its event came first: it finished in this run
            if (rec.state == pool::operation_state::done ||
                rec.state == pool::operation_state::failed)
              finished_earlier(seq, rec);
            else
              watch(operation); // with --queue, it may run elsewhere
          },
          [](caf::error&) {
            // Then its event will tell.
          });
}

void runner_state::on_event(pool::pool_event& ev) {
  switch (ev.kind) {
    case pool::event_kind::retried:
      ++retries_;
      ++reported_;
      return;
    case pool::event_kind::completed:
    case pool::event_kind::failed:
      break;
    default:
      return;
  }
  if (!journaled())
    return;
  ++reported_; // (adopted operations of other inputs too)
  auto i = seq_of_.find(ev.operation);
  if (i == seq_of_.end()) {
    unclaimed_.emplace(ev.operation, std::move(ev));
    return;
  }
  on_journal_outcome(i->second, ev);
}

void runner_state::on_journal_outcome(uint64_t seq,
                                      const pool::pool_event& ev) {
  auto i = running_.find(seq);
  if (i == running_.end() || i->second.recording)
    return;
  auto& entry = i->second;
  entry.recording = true;
  seq_of_.erase(ev.operation);
  std::optional<job_result> res;
  caf::error err;
  if (ev.kind == pool::event_kind::completed) {
    res = result_in(ev.result);
  } else {
    err = ev.error;
    res = result_of(err);
  }
  // Print only once the journal has the outcome: a command whose output was
  // printed never runs again on resume. A status lookup of a finished
  // operation is answered after the store committed what came before it,
  // so one lookup covers every outcome that arrived before it was sent.
  ++recording_;
  awaiting_commit_.push_back({seq, std::move(res), std::move(err)});
  latest_outcome_ = ev.operation;
  if (!commit_query_)
    query_commit();
  pump();
}

void runner_state::query_commit() {
  commit_query_ = true;
  auto batch = std::make_shared<std::vector<recorded_outcome>>(
      std::move(awaiting_commit_));
  awaiting_commit_.clear();
  auto done = [this, batch] {
    commit_query_ = false;
    for (auto& x : *batch) {
      --recording_;
      outcome(x.seq, std::move(x.res), x.err);
    }
    if (!awaiting_commit_.empty())
      query_commit();
  };
  auto timeout = cfg_.options.queue.empty()
                     ? caf::duration{caf::infinite}
                     : caf::duration{queue_patience(cfg_.options)};
  self_->request(cfg_.pool, timeout, pool::op_status_atom_v, latest_outcome_)
      .then(
          [this, done, batch](pool::operation_record& rec) {
            if (!unreadable(rec)) {
              refused_since_.reset();
              done();
              return;
            }
            // Asked while the queue's database was out of reach: ask
            // again in a moment (for at most --queue-outage).
            out_of_reach();
            commit_query_ = false;
            awaiting_commit_.insert(awaiting_commit_.begin(),
                                    std::make_move_iterator(batch->begin()),
                                    std::make_move_iterator(batch->end()));
            self_->delayed_send(self_, watch_interval, recheck_atom_v);
          },
          [this, done, batch](caf::error& err) {
            if (err != caf::sec::request_timeout) {
              done();
              return;
            }
            commit_query_ = false;
            unrecorded(*batch);
            if (!awaiting_commit_.empty())
              query_commit();
          });
}

void runner_state::unrecorded(std::vector<recorded_outcome>& batch) {
  console::message(std::to_string(batch.size()) +
                   " outcomes could not be recorded (the queue's database "
                   "is out of reach): not printed; they count as run, and a "
                   "resume with --retries runs them again");
  for (auto& x : batch) {
    --recording_;
    ++own_errors_;
    if (auto i = running_.find(x.seq); i != running_.end()) {
      out_->finished(i->second.job, std::nullopt, false);
      running_.erase(i);
    }
  }
  pump();
  check_end();
}

void runner_state::finished_earlier(uint64_t seq,
                                    const pool::operation_record& rec) {
  auto i = running_.find(seq);
  if (i == running_.end())
    return;
  auto job = std::move(i->second.job);
  if (i->second.operation)
    seq_of_.erase(*i->second.operation);
  running_.erase(i);
  --started_jobs_;
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
  out_->finished(job, std::move(res), false);
  pump();
  check_end();
}

void runner_state::finished_elsewhere(uint64_t operation,
                                      const caf::error* failure) {
  // This pool's event comes before the report to the submitter: a job with
  // no event here ran in another poolrun of the shared queue. It prints
  // there and is in that poolrun's joblog; here it only counts.
  if (cfg_.options.queue.empty())
    return;
  auto i = seq_of_.find(operation);
  if (i == seq_of_.end())
    return;
  auto seq = i->second;
  seq_of_.erase(i);
  auto j = running_.find(seq);
  if (j == running_.end() || j->second.recording)
    return;
  auto job = std::move(j->second.job);
  running_.erase(j);
  --started_jobs_;
  ++elsewhere_;
  if (failure != nullptr && !pool::is(*failure, pool::pool_errc::cancelled))
    ++elsewhere_failed_;
  out_->finished(job, std::nullopt, false);
  pump();
  check_end();
}

void runner_state::watch(uint64_t operation) {
  if (cfg_.options.queue.empty())
    return;
  watched_.push_back(operation);
  if (!watch_scheduled_) {
    watch_scheduled_ = true;
    self_->delayed_send(self_, watch_interval, watch_atom_v);
  }
}

void runner_state::watch_round() {
  // A job that another poolrun of the queue runs sends nothing here: its
  // record tells. A round reads a few records, oldest first; one that ran
  // here (an event came) is dropped unread.
  watch_scheduled_ = false;
  probe_queue();
  size_t asked = 0;
  while (!watched_.empty() && asked < watch_batch) {
    auto operation = watched_.front();
    watched_.pop_front();
    if (seq_of_.count(operation) == 0)
      continue;
    ++asked;
    self_->request(cfg_.pool, caf::infinite, pool::op_status_atom_v, operation)
        .then(
            [this, operation](pool::operation_record& rec) {
              switch (rec.state) {
                case pool::operation_state::done:
                  finished_elsewhere(operation, nullptr);
                  return;
                case pool::operation_state::failed:
                case pool::operation_state::cancelled:
                case pool::operation_state::stopped:
                  finished_elsewhere(operation, &rec.error);
                  return;
                default:
                  // (Read while the database is away: the same, unknown.)
                  if (unreadable(rec))
                    out_of_reach();
                  watch(operation);
              }
            },
            [this, operation](caf::error&) { watch(operation); });
  }
  if (!watched_.empty() && !watch_scheduled_) {
    watch_scheduled_ = true;
    self_->delayed_send(self_, watch_interval, watch_atom_v);
  }
}

void runner_state::report_foreign() {
  // Outcomes of journaled operations that no job claimed: they ran
  // (adopted) but belong to another input.
  for (auto& kvp : unclaimed_) {
    auto& ev = kvp.second;
    std::optional<job_result> res;
    if (ev.kind == pool::event_kind::completed) {
      res = result_in(ev.result);
    } else if (!pool::is(ev.error, pool::pool_errc::cancelled)) {
      ++failed_;
      res = result_of(ev.error);
    }
    ++foreign_;
    if (res)
      console::write_result(*res, "");
  }
  unclaimed_.clear();
  if (foreign_ > 0)
    console::message(std::to_string(foreign_) +
                     " unfinished commands from the journal were not in "
                     "this input; they ran too");
}

void runner_state::record_skipped(pending_job job) {
  auto seq = job.spec.seq;
  job_result res;
  res.command = job.spec.command;
  res.exit_code = -2;
  res.started_at = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  auto& entry = running_[seq];
  entry.job = std::move(job);
  complete(entry, std::move(res), caf::error{});
  running_.erase(seq);
}

} // namespace poolrun
