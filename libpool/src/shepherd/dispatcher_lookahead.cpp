// Lookahead: a busy worker of the pool's own gets its next batch while it
// runs the current one, so that it starts it without waiting for the
// shepherd to answer its report (docs/protocol.md "Lookahead"). The batch
// waits in the worker's mailbox under a claim ticket; until the worker
// takes the ticket, the shepherd can take the batch back: for a worker
// that asks for work while nothing else is ready (so no entry waits behind
// a long job), on pause, and when one of its operations ends.
#include "pool/detail/dispatcher.hpp"

#include <algorithm>

#include <caf/make_message.hpp>

#include "pool/type_ids.hpp"

namespace pool {

operation* dispatcher::startable(const work_record& record) const {
  auto op = table_.current(record.id);
  return op != nullptr && op->phase == operation_phase::queued ? op : nullptr;
}

bool dispatcher::hold(worker_ref worker, work_record& record, operation& op,
                      time_point now, bool ahead) {
  if (ahead) {
    table_.send_ahead(record.id.operation, op, worker); // (Waits till it runs.)
  } else {
    mon_.queue_wait().record(now - op.stamp);
    table_.hold(record.id.operation, op, worker, now);
  }
  record.budget = budget(record.id.operation, op); // (shown: current_job())
  return record.budget != caf::timespan::zero();
}

void dispatcher::send_ahead(worker_ref worker) {
  if (!tuning_.lookahead || gate_.limited() || keys_.limited())
    return;
  auto slot = roster_.get(worker);
  if (slot == nullptr || !own(*slot) || slot->retiring || slot->ahead > 0 ||
      slot->phase != worker_phase::working)
    return;
  if (ready_.empty()) {
    if (std::find(lookahead_wanted_.begin(), lookahead_wanted_.end(),
                  worker) == lookahead_wanted_.end())
      lookahead_wanted_.push_back(worker);
    prefetch();
    return;
  }
  auto now = fx_.now();
  auto batch = take_ready(batch_size(false));
  bool timed = false;
  size_t kept = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& record = batch[i];
    auto op = startable(record);
    if (op == nullptr)
      continue; // (See dispatch.)
    if (table_.orphaned(record.id.operation)) {
      host_.orphaned(record.id.operation);
      continue;
    }
    timed = hold(worker, record, *op, now, true) || timed;
    if (kept != i)
      batch[kept] = std::move(record);
    ++kept;
  }
  batch.resize(kept);
  // (Failing an orphan may have changed the worker's slot.)
  slot = roster_.get(worker);
  if (batch.empty() || slot == nullptr) {
    for (auto& record : batch)
      requeue(record.id, now);
    return;
  }
  for (auto& record : batch)
    slot->held.push_back(record.id);
  slot->ahead = static_cast<uint32_t>(batch.size());
  slot->ahead_ticket.emplace();
  // (Holders that started their batch or left since are dropped from the
  // front as they show up there.)
  auto stale = [this](worker_ref ref) {
    auto holder = roster_.get(ref);
    return holder == nullptr || holder->ahead == 0;
  };
  while (!ahead_holders_.empty() && stale(ahead_holders_.front()))
    ahead_holders_.pop_front();
  if (ahead_holders_.size() > 2 * roster_.size())
    ahead_holders_.erase(std::remove_if(ahead_holders_.begin(),
                                        ahead_holders_.end(), stale),
                         ahead_holders_.end());
  ahead_holders_.push_back(worker);
  ++mon_.counters().sent_ahead;
  if (batch.size() > 1) {
    ++mon_.counters().batches;
    mon_.counters().batched += batch.size();
  }
  // (Even one job as a batch: see dispatch.) With a timeout, each attempt
  // reports as it finishes.
  fx_.to_worker(*slot, caf::make_message(work_to_do_atom_v, std::move(batch),
                                         timed, *slot->ahead_ticket));
  prefetch();
}

void dispatcher::serve_lookahead() {
  while (!ready_.empty() && !lookahead_wanted_.empty()) {
    auto worker = lookahead_wanted_.front();
    lookahead_wanted_.pop_front();
    send_ahead(worker);
  }
}

bool dispatcher::start_ahead(worker_ref worker, worker_slot& slot) {
  if (slot.ahead == 0)
    return false;
  // It runs it after the report that ended the current batch (its ticket
  // is the worker's to take now), and asks for work in between: that ask
  // changes nothing.
  slot.ahead = 0;
  slot.ahead_ticket.reset();
  ++slot.asks_due;
  auto now = fx_.now();
  for (auto& id : slot.held)
    if (auto op = table_.current(id)) { // (Started: no longer waiting.)
      mon_.queue_wait().record(now - op->stamp);
      table_.hold(id.operation, *op, worker, now);
    }
  host_.room_changed(); // (Parked submits may fit now.)
  batch_done(slot);
  next_in_batch(worker, slot);
  send_ahead(worker);
  return true;
}

std::vector<attempt_id> dispatcher::release_held(worker_slot& slot) {
  auto result = std::move(slot.held);
  slot.held.clear();
  forget_ahead(slot);
  return result;
}

void dispatcher::forget_ahead(worker_slot& slot) {
  // Withdrawn: a worker that outlives this (a stuck one, abandoned after a
  // timeout) must not run what goes back with the rest.
  if (slot.ahead_ticket)
    slot.ahead_ticket->withdraw();
  slot.ahead = 0;
  slot.ahead_ticket.reset();
}

dispatcher::record_batch dispatcher::take_back(worker_slot& slot) {
  record_batch result;
  if (slot.ahead == 0 || !slot.ahead_ticket->withdraw())
    return result; // None, or the worker runs it already.
  auto first = slot.held.end() - slot.ahead;
  auto now = fx_.now();
  for (auto i = first; i != slot.held.end(); ++i)
    if (auto op = table_.current(*i)) {
      table_.wait(i->operation, i->attempt, op->stamp, now); // (Due then.)
      result.push_back(table_.record_of(*i, *op));
    }
  slot.held.erase(first, slot.held.end());
  forget_ahead(slot);
  ++mon_.counters().taken_back;
  return result;
}

void dispatcher::take_back_oldest() {
  while (!ahead_holders_.empty()) {
    auto holder = ahead_holders_.front();
    ahead_holders_.pop_front();
    auto slot = roster_.get(holder);
    if (slot == nullptr)
      continue;
    auto back = take_back(*slot);
    if (back.empty())
      continue; // (Started, or nothing left in it.)
    ready_.append(std::move(back));
    return;
  }
}

void dispatcher::take_back_all() {
  record_batch back;
  for (auto holder : ahead_holders_)
    if (auto slot = roster_.get(holder))
      for (auto& record : take_back(*slot))
        back.push_back(std::move(record));
  ahead_holders_.clear();
  lookahead_wanted_.clear();
  put_first(std::move(back));
}

void dispatcher::put_first(record_batch back) {
  // Older than anything ready: first in line again.
  ready_.push_front(std::move(back));
}

void dispatcher::ended_ahead(worker_ref holder) {
  // It would run for nothing: the rest of its batch waits first in line.
  auto slot = roster_.get(holder);
  if (slot == nullptr)
    return;
  auto back = take_back(*slot);
  if (back.empty())
    return;
  put_first(std::move(back));
  serve_askers();
  send_ahead(holder);
}

} // namespace pool
