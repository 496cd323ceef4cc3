// Hand-ahead: while jobs go one at a time and every worker is busy, the
// next due entry goes to all the busy workers under one claim ticket; the
// first whose job ends starts it, unless a worker that asked first got it
// (docs/protocol.md "Hand-ahead").
#include "pool/dispatcher.hpp"

#include <algorithm>

#include <caf/make_message.hpp>

#include "pool/type_ids.hpp"

namespace pool {

void dispatcher::hand_ahead() {
  if (!tuning_.hand_ahead || ahead_ || ready_.empty() || !askers_.empty() ||
      roster_.sleeping() > 0 || batch_size(false) > 1 || gate_.limited() ||
      keys_.limited())
    return;
  std::vector<worker_ref> to;
  roster_.for_each(worker_phase::working,
                   [&](worker_ref ref, const worker_slot& slot) {
                     if (own(slot) && !slot.retiring && slot.held.size() == 1)
                       to.push_back(ref);
                     return to.size() < max_ahead_takers;
                   });
  if (to.empty())
    return;
  while (!ready_.empty()) {
    auto record = std::move(ready_.front());
    ready_.pop_front();
    auto op = table_.current(record.id);
    if (op == nullptr || op->phase != operation_phase::queued)
      continue; // Obsolete (see dispatch).
    if (table_.orphaned(record.id.operation)) {
      host_.orphaned(record.id.operation);
      if (ahead_)
        return; // (Failing an orphan may have handed one ahead meanwhile.)
      continue;
    }
    // Still waiting until a worker takes it (see took_ahead).
    table_.offer(record.id.operation);
    record.budget = budget(record.id.operation, *op);
    ahead_ = ahead_offer{record.id, claim_ticket{}, std::move(to)};
    ++mon_.counters().handed_ahead;
    for (auto ref : ahead_->to)
      fx_.to_worker(
          *roster_.get(ref),
          caf::make_message(work_to_do_atom_v, record, ahead_->ticket));
    break;
  }
  prefetch();
}

bool dispatcher::may_take_ahead(worker_ref worker) const {
  if (!ahead_ || std::find(ahead_->to.begin(), ahead_->to.end(), worker) ==
                     ahead_->to.end())
    return false;
  auto slot = roster_.get(worker);
  return ahead_->ticket.is_open() ||
         (slot != nullptr && ahead_->ticket.taken_by(slot->actor_id));
}

bool dispatcher::took_ahead(worker_ref worker) {
  if (!may_take_ahead(worker))
    return false;
  // Decided now: withdrawn unless taken, so it cannot take it after this.
  ahead_->ticket.withdraw();
  auto slot = roster_.get(worker);
  // (Only a worker it was sent to: a joined worker's proxy may carry the
  // same actor id as a local one, ids being per node.)
  if (!ahead_->ticket.taken_by(slot->actor_id))
    return false;
  // It took the entry right after its last report: it runs since about
  // now. (If the operation ended meanwhile, the report is dropped as stale
  // like any other of an ended operation.)
  auto id = ahead_->id;
  ahead_.reset();
  ++mon_.counters().taken_ahead;
  auto now = fx_.now();
  if (auto op = table_.current(id); op != nullptr) {
    mon_.queue_wait().record(now - op->stamp);
    table_.hold(id.operation, worker, now);
  }
  slot->held.assign(1, id);
  slot->started = now;
  roster_.set_phase(worker, worker_phase::working, now);
  start_timer(id, worker);
  host_.room_changed();
  hand_ahead(); // It runs the entry handed ahead: it is busy again.
  return true;
}

std::optional<work_record> dispatcher::withdraw_ahead() {
  if (!ahead_ || !ahead_->ticket.withdraw())
    return std::nullopt; // None, or taken: settled when its taker asks.
  auto id = ahead_->id;
  ahead_.reset();
  auto op = table_.current(id);
  if (op == nullptr)
    return std::nullopt;
  table_.withdraw(id.operation);
  return table_.record_of(id, *op);
}

} // namespace pool
