// A shepherd over a shared store (`pg_store`): the queue holds operations
// that other shepherds accepted, other shepherds may run this one's
// operations, and attempts are leased. docs/postgres.md walks through it.
#include "pool/detail/shepherd_core.hpp"

#include <algorithm>

#include <caf/make_message.hpp>

#include "pool/type_ids.hpp"

namespace pool {

void shepherd_core::take_shared(std::vector<work_record>& records) {
  auto t = now();
  for (auto& record : records) {
    auto id = record.id.operation;
    // (The operation's own options, as the store keeps them.)
    operation_policy own;
    own.priority = record.priority;
    own.max_attempts = record.max_attempts;
    own.attempt_timeout = record.budget;
    auto op = table_.find(id);
    if (op == nullptr) {
      // Accepted by another shepherd of the queue: run here, no caller.
      operation x;
      x.payload = record.payload;
      x.attempt = record.id.attempt;
      x.submitted_at = t;
      x.stamp = t;
      table_.adopt(id, std::move(x), t, own, false);
      if (!record.concurrency_key.empty())
        table_.extras_of(id).concurrency_key = record.concurrency_key;
      ++mon_.counters().adopted;
    } else if (record.id.attempt > op->attempt) {
      // A lease taken back (from this shepherd, or from the one that ran
      // an operation submitted here too): the new attempt is current.
      table_.wait(id, record.id.attempt, t, t);
    }
    // Taken back from a dead shepherd once too often: its last attempt
    // was the last one allowed. (The attempt number also counts snoozes,
    // which this shepherd cannot see: it never fails an operation earlier
    // than the pool's own limit would.)
    auto allowed = std::max(sup_.attempts_for(own),
                            sup_.attempts_for(operation_policy{}));
    if (record.id.attempt > allowed) {
      // (Each earlier attempt ran where its lease was lost; the store has
      // their histories.)
      std::vector<attempt_failure> lost;
      for (uint32_t n = 1; n < record.id.attempt; ++n)
        lost.push_back(attempt_failure{
            n, caf::timespan{0},
            caf::make_error(pool_errc::lease_lost,
                            "op#" + std::to_string(id) + "/"
                                + std::to_string(n),
                            std::string{"it ran where its lease was lost "
                                        "(the process stopped or lost the "
                                        "database); see the operation's "
                                        "stored history"})});
      fail(id, caf::make_error(pool_errc::operation_failed, id,
                               std::move(lost)));
    }
  }
}

void shepherd_core::moved_elsewhere(uint64_t id, uint32_t attempt) {
  auto op = table_.find(id);
  if (op == nullptr)
    return;
  auto extras = table_.find_extras(id);
  auto waited_for = static_cast<bool>(op->caller) ||
                    (extras != nullptr && extras->forwarded.pending());
  if (!waited_for) {
    ++mon_.counters().released;
    forget(id); // Adopted: whoever runs it now records its outcome.
    return;
  }
  // The outcome comes from the store once another shepherd has it.
  auto t = now();
  table_.wait(id, std::max(attempt, op->attempt), t, t);
  note_waiting();
}

void shepherd_core::leases_lost(const std::vector<uint64_t>& ops) {
  for (auto id : ops) {
    auto op = table_.find(id);
    if (op == nullptr)
      continue;
    ++mon_.counters().leases_lost;
    fx_.log(log_level::warning,
            "the lease of op#" + std::to_string(id) + "/" +
                std::to_string(op->attempt) +
                " was lost (another shepherd took it back and runs it "
                "again); its outcome here will be fenced");
    moved_elsewhere(id, op->attempt + 1);
  }
  check_drained();
}

void shepherd_core::store_news(bool work, const std::vector<uint64_t>& finished,
                               bool missed) {
  // A sleeper asks the queue itself (the store's counts are estimates, read
  // at most every 20 ms); the counts that come with the next answers wake
  // more of them. (Without sleepers, workers ask when their jobs end.)
  if (work)
    disp_.wake_one();
  for (auto id : finished)
    if (auto op = table_.find(id);
        op != nullptr && op->phase != operation_phase::held)
      look_up_outcome(id);
  if (missed)
    table_.for_each([this](uint64_t id, const operation& op) {
      if (op.phase == operation_phase::queued)
        look_up_outcome(id);
    });
}

void shepherd_core::look_up_outcome(uint64_t id) {
  exchange::lookup x;
  x.operation = id;
  x.sent = caf::make_message(queue_msg::record_v, id);
  x.settle = true;
  link_.send(std::move(x));
}

void shepherd_core::settle_from(uint64_t id, operation_record& rec) {
  if (rec.id == 0) { // Pruned before it was read: the outcome is gone.
    rec.id = id;
    rec.state = operation_state::failed;
    rec.error = caf::make_error(pool_errc::unknown_operation, id);
  }
  auto op = table_.find(rec.id);
  if (op == nullptr || op->phase == operation_phase::held)
    return; // Ended meanwhile, or running here again.
  switch (rec.state) {
    case operation_state::queued:
    case operation_state::running:
      if (rec.attempt > op->attempt && op->phase == operation_phase::queued) {
        auto t = now();
        table_.wait(rec.id, rec.attempt, t, t); // Still going elsewhere.
      }
      return;
    case operation_state::done:
      ++mon_.counters().completed;
      settle(rec.id, std::move(rec.result), true);
      return;
    case operation_state::failed:
    case operation_state::stopped:   // (only the shepherd's memory says
    case operation_state::discarded: // these two: never a store)
      ++mon_.counters().failed;
      settle(rec.id, caf::make_message(std::move(rec.error)), false);
      return;
    case operation_state::cancelled:
      ++mon_.counters().cancelled;
      settle(rec.id,
             caf::make_message(caf::make_error(pool_errc::cancelled, rec.id)),
             false);
      return;
  }
}

bool shepherd_core::shared_refusal(pending_exchange::kind& ex,
                                   const caf::error& err) {
  if (auto add = std::get_if<exchange::add>(&ex)) {
    if (add->ack && is(err, pool_errc::key_taken) &&
        err.context().match_elements<std::string, uint64_t>()) {
      // Another shepherd took the key after this one's lookup: the caller
      // gets that operation's id, as for a key found at once.
      ++mon_.counters().deduplicated;
      fx_.deliver(*add->ack,
                  caf::make_message(err.context().get_as<uint64_t>(1)));
      forget(add->id.operation);
      return true;
    }
    if (!add->ack && is(err, pool_errc::lease_lost)) {
      // A retry of an attempt another store took back: it runs there.
      moved_elsewhere(add->id.operation, add->id.attempt);
      return true;
    }
    return false;
  }
  if (std::holds_alternative<exchange::record>(ex) &&
      is(err, pool_errc::lease_lost)) {
    // A late outcome of an attempt another store took back: fenced.
    fx_.log(log_level::warning, "a late outcome was fenced: " + describe(err));
    check_drained();
    return true;
  }
  return false;
}

} // namespace pool
