// The way out: status replies, retries, final outcomes, cancellation, drain.
#include "pool/detail/shepherd_core.hpp"

#include <algorithm>

#include <caf/make_message.hpp>

#include "pool/duration_text.hpp"
#include "pool/job_control.hpp"
#include "pool/type_ids.hpp"

namespace pool {

void shepherd_core::status(const void* key, const attempt_id& id,
                           caf::message* result, caf::error* failure) {
  auto worker = roster_.find(key);
  auto slot = roster_.get(worker);
  if (slot == nullptr || slot->phase != worker_phase::working ||
      slot->held.empty() || slot->held.front() != id) {
    ++mon_.counters().stale_replies; // Not the attempt it holds (first).
    return;
  }
  auto t = now();
  auto elapsed = t - slot->started;
  slot->started = t;
  slot->held.erase(slot->held.begin());
  if (slot->ahead > 0 && slot->held.size() == slot->ahead) {
    // Its batch ended: it runs the one sent ahead now, unless its resource
    // broke (it stops: that batch goes back unstarted).
    if (failure == nullptr || !is(*failure, pool_errc::resource_broken)) {
      disp_.start_ahead(worker, *slot);
    } else {
      auto back = disp_.release_held(*slot);
      done_holding(worker, *slot);
      return_unstarted(back, 0);
    }
  } else if (!slot->held.empty()) {
    disp_.next_in_batch(worker, *slot); // Reported attempt by attempt.
  } else {
    done_holding(worker, *slot);
  }
  auto op = table_.current(id);
  if (op == nullptr || op->phase != operation_phase::held) {
    ++mon_.counters().stale_replies;
    return;
  }
  disp_.note_processing(elapsed, 1);
  outcome(id, result, failure, elapsed);
}

void shepherd_core::slow_job(const void* key, caf::timespan ran) {
  auto slot = roster_.get(roster_.find(key));
  if (slot == nullptr || slot->joined) {
    ++mon_.counters().stale_replies;
    return;
  }
  mon_.note_job_time(ran);
}

void shepherd_core::status(const void* key,
                           std::vector<attempt_outcome>& outcomes,
                           std::optional<caf::timespan> ran) {
  auto worker = roster_.find(key);
  auto slot = roster_.get(worker);
  // The outcomes must be those of the first attempts of the batch held.
  auto matches = [&] {
    if (outcomes.empty() || outcomes.size() > slot->held.size())
      return false;
    for (size_t i = 0; i < outcomes.size(); ++i)
      if (outcomes[i].id != slot->held[i])
        return false;
    return true;
  };
  if (slot == nullptr || slot->phase != worker_phase::working || !matches()) {
    ++mon_.counters().stale_replies;
    return;
  }
  // Since the first attempt reported here started, each job took its share
  // of the time.
  auto t = now();
  auto elapsed = ran ? *ran : t - slot->started;
  std::vector<attempt_id> held;
  // (A worker whose resource broke reports that attempt last, and stops.)
  auto stops = outcomes.back().failed() &&
               is(outcomes.back().error, pool_errc::resource_broken);
  if (slot->ahead > 0 && !stops &&
      outcomes.size() + slot->ahead == slot->held.size()) {
    // The whole batch: it runs the one sent ahead now (nothing goes back).
    auto end = slot->held.begin() + static_cast<ptrdiff_t>(outcomes.size());
    slot->held.erase(slot->held.begin(), end);
    slot->started = t;
    disp_.start_ahead(worker, *slot);
  } else if (slot->ahead == 0 && outcomes.size() == slot->held.size()) {
    // The whole batch, nothing sent ahead: nothing goes back either.
    disp_.clear_held(*slot);
    done_holding(worker, *slot);
  } else {
    // (A worker that stopped early returns the rest, the batch sent ahead
    // too.)
    held = disp_.release_held(*slot);
    done_holding(worker, *slot);
  }
  disp_.note_processing(elapsed, outcomes.size());
  // Attempts the worker did not start (it stopped early) go back first:
  // settling an outcome may admit newer submits.
  return_unstarted(held, outcomes.size());
  auto share = elapsed / static_cast<int64_t>(outcomes.size());
  // Nothing to record or publish per result: each goes to its caller.
  auto quiet = !durable_ && !fx_.wants(event_kind::completed);
  uint64_t reported = 0;
  for (auto& x : outcomes) {
    auto op = table_.current(x.id);
    if (op == nullptr || op->phase != operation_phase::held ||
        op->holder != worker) {
      ++mon_.counters().stale_replies;
      continue;
    }
    ++reported;
    if (x.failed()) {
      attempt_failed(x.id, std::move(x.error));
    } else if (quiet) {
      ++mon_.counters().completed;
      if (x.reply)
        settle(x.id.operation, std::move(x.reply));
      else
        settle(x.id.operation, std::move(x.result), true);
    } else {
      complete(x.id.operation, x.take_result());
    }
  }
  mon_.processing().record(share, reported);
}

void shepherd_core::return_unstarted(const std::vector<attempt_id>& held,
                                     size_t from) {
  if (from >= held.size())
    return; // (The usual case: the whole batch reported.)
  auto t = now();
  for (size_t i = from; i < held.size(); ++i)
    if (table_.current(held[i]) != nullptr)
      disp_.requeue(held[i], t);
}

void shepherd_core::fail_held(const std::vector<attempt_id>& held,
                              caf::error reason) {
  // The first attempt held was running (or, in a batch reported as a
  // whole, is taken to have been); the others go back unstarted (first:
  // failing an operation may admit newer submits).
  return_unstarted(held, 1);
  if (!held.empty())
    attempt_failed(held.front(), std::move(reason));
}

void shepherd_core::outcome(const attempt_id& id, caf::message* result,
                            caf::error* failure, caf::timespan processing) {
  mon_.processing().record(processing);
  if (result != nullptr)
    complete(id.operation, std::move(*result));
  else
    attempt_failed(id, std::move(*failure));
}

void shepherd_core::attempt_failed(const attempt_id& id, caf::error reason) {
  auto op = table_.current(id);
  if (op == nullptr)
    return;
  auto t = now();
  auto& history = table_.extras_of(id.operation).history;
  history.push_back(
      attempt_failure{id.attempt, t - op->submitted_at, std::move(reason)});
  if (durable_)
    record(caf::make_message(queue_msg::note_v, id.operation, history.back()),
           false);
  auto& reason_now = history.back().reason;
  if (counts_as_timeout(reason_now)) // a job that enforces its own deadline
    ++mon_.counters().timed_out;
  if (auto snooze = snooze_delay(reason_now)) {
    // Runs again later as if this attempt had not happened: the next
    // attempt number (stale replies stay told apart), no attempt used up.
    ++mon_.counters().snoozed;
    disp_.requeue(attempt_id{id.operation, id.attempt + 1}, t + *snooze);
    return;
  }
  // Snoozed attempts count neither against max_attempts nor for backoff.
  auto snoozes = static_cast<uint32_t>(
      std::count_if(history.begin(), history.end(), [](const auto& x) {
        return is(x.reason, pool_errc::snoozed);
      }));
  auto failed = id.attempt > snoozes ? id.attempt - snoozes : uint32_t{1};
  auto due = is_discard(reason_now) ? std::nullopt
                                    : sup_.retry_at(
                                        failed, table_.policy(id.operation, *op), t);
  if (due) {
    ++mon_.counters().retried;
    if (fx_.wants(event_kind::retried))
      fx_.publish({event_kind::retried,
                   id.operation,
                   id.attempt,
                   0,
                   {},
                   history.back().reason});
    disp_.requeue(attempt_id{id.operation, id.attempt + 1}, *due);
    return;
  }
  if (dead_.enabled())
    keep_dead(id.operation, *op, history);
  fail(id.operation, caf::make_error(pool_errc::operation_failed, id.operation,
                                     std::move(history)));
}

void shepherd_core::complete(uint64_t id, caf::message result) {
  if (durable_)
    record(caf::make_message(queue_msg::finish_v, id, result), true);
  if (fx_.wants(event_kind::completed))
    fx_.publish({event_kind::completed, id, 0, 0, result, {}});
  ++mon_.counters().completed;
  settle(id, std::move(result), true);
}

void shepherd_core::fail(uint64_t id, caf::error err) {
  if (table_.find(id) == nullptr)
    return;
  auto cancelled = is(err, pool_errc::cancelled);
  if (durable_)
    record(caf::make_message(queue_msg::finish_v, id, err), true);
  if (fx_.wants(event_kind::failed))
    fx_.publish({event_kind::failed, id, 0, 0, {}, err});
  ++(cancelled ? mon_.counters().cancelled : mon_.counters().failed);
  settle(id, caf::make_message(std::move(err)), false);
}

void shepherd_core::settle(uint64_t id, caf::message&& outcome, bool done) {
  auto ended = table_.end(id);
  answer(ended, std::move(outcome), done);
  ended_hooks(ended);
}

void shepherd_core::settle(uint64_t id, prepared_reply&& reply) {
  auto ended = table_.end(id);
  if (!ended.op.tracked && ended.op.caller)
    fx_.respond(ended.op.caller, std::move(reply));
  else
    answer(ended, reply.take_message(), true);
  ended_hooks(ended);
}

void shepherd_core::answer(operation_table::ended& ended,
                           caf::message&& outcome, bool done) {
  auto& op = ended.op;
  auto id = ended.id;
  if (op.tracked) {
    if (done && op.typed)
      fx_.tell(op.caller.source,
               caf::make_message(op_result_atom_v, id) + outcome);
    else if (done)
      fx_.tell(op.caller.source,
               caf::make_message(op_done_atom_v, id, std::move(outcome)));
    else
      fx_.tell(op.caller.source,
               caf::make_message(op_failed_atom_v, id,
                                 outcome.get_as<caf::error>(0)));
  } else if (op.caller) {
    fx_.respond(op.caller, std::move(outcome));
  } else if (ended.forwarded()) {
    fx_.deliver(ended.extras->forwarded, std::move(outcome));
  }
}

void shepherd_core::forget(uint64_t id) {
  auto ended = table_.end(id);
  if (ended.id != 0)
    ended_hooks(ended);
}

void shepherd_core::ended_hooks(const operation_table::ended& ended) {
  // Each unit cleans up after the operation.
  disp_.operation_ended(ended.id, ended.op);
  left(ended.op.intake);
  if (watch_callers_)
    for (auto& caller : table_.unwatched())
      fx_.watch_caller(caller, false);
  note_waiting();
  if (adm_.parked() > 0)
    admit_parked();
  if (draining())
    check_drained();
  // Last: it may drop the last reference to this shepherd.
  auto promised = (!ended.op.tracked && ended.op.caller) ||
                  ended.forwarded();
  if (promised && --promised_ == 0)
    fx_.keep_alive(false);
}

void shepherd_core::record(caf::message sent, bool outcome) {
  link_.send(exchange::record{std::move(sent), outcome});
}

void shepherd_core::drain(std::optional<caf::timespan> deadline,
                          caf::response_promise promise) {
  if (deadline && *deadline < caf::timespan::zero()) {
    fx_.deliver(promise,
                caf::make_message(caf::make_error(pool_errc::invalid_delay,
                                                  duration_text(*deadline))));
    return;
  }
  adm_.close();
  drain_promises_.push_back(std::move(promise));
  if (deadline)
    fx_.schedule(*deadline, timer_event{timer_kind::drain, {}, {}});
  check_drained();
}

void shepherd_core::on_drain_deadline() {
  if (drain_promises_.empty())
    return;
  // What is left fails at once, parked and queued first (so that no room
  // made here lets a parked submit in), then what runs: a stuck attempt
  // does not hold the drain up; its late reply is stale.
  for (auto& sub : adm_.take_parked())
    refuse(sub, caf::make_error(pool_errc::drain_deadline, uint64_t{0},
                                std::string{"never started"}));
  for (auto& sub : adm_.take_lookups())
    refuse(sub, caf::make_error(pool_errc::drain_deadline, uint64_t{0},
                                std::string{"never started"}));
  for (auto phase : {operation_phase::queued, operation_phase::held}) {
    std::vector<uint64_t> ids;
    table_.for_each([&](uint64_t id, const operation& op) {
      if (op.phase == phase)
        ids.push_back(id);
    });
    for (auto id : ids) {
      keep_ended(id, job_state::stopped); // (its status still says so)
      fail(id, caf::make_error(pool_errc::drain_deadline, id));
    }
  }
  check_drained();
}

void shepherd_core::check_drained() {
  if (!draining() || !table_.empty() || adm_.parked() > 0 ||
      adm_.looking_up() > 0 || drain_promises_.empty())
    return;
  // A durable store has recorded every outcome before the drain is done.
  if (link_.recording())
    return;
  for (auto& promise : drain_promises_)
    fx_.deliver(promise, caf::make_message());
  drain_promises_.clear();
  fx_.quit(caf::error{});
}

} // namespace pool
