// The dispatcher's side of flow control: it asks the flow gate (pause, the
// start-rate limit) before every start, wakes sleepers as tokens come
// back, and settles the tokens a batch held (pool/flow_gate.hpp); entries
// whose concurrency key may not start wait in the key gate until it may
// (pool/key_limits.hpp).
#include "pool/detail/dispatcher.hpp"

#include <algorithm>

#include "pool/detail/queue_link.hpp"

namespace pool {

void dispatcher::wake_for_available() {
  auto waiting = roster_.waiting();
  auto unclaimed = available() > waiting ? available() - waiting : uint64_t{0};
  if (keys_.parked() > 0) {
    // Entries whose key may start again count as due work too; a key
    // waiting for a token is looked at again when it comes back.
    unclaimed += startable_keys();
    auto now = fx_.now();
    if (auto next = keys_.next_token(now))
      arm_due(*next - now);
  }
  auto n = std::min<uint64_t>(unclaimed, roster_.sleeping());
  if (gate_.limited()) {
    auto now = fx_.now();
    n = gate_.allowed(now, static_cast<size_t>(n));
    if (n < unclaimed && !gate_.paused()) {
      // Work waits for a token: look again when the next one is back.
      auto next = gate_.next_start(now);
      if (next > now)
        arm_due(next - now);
    }
  }
  // (Looking for work may admit parked submits, which may wake sleepers
  // themselves.)
  for (uint64_t i = 0; i < n && roster_.sleeping() > 0; ++i)
    wake_sleeper();
}

bool dispatcher::gate_open(worker_ref worker) {
  if (!gate_.limited())
    return true;
  auto now = fx_.now();
  if (gate_.allowed(now, 1) > 0)
    return true;
  auto next = gate_.next_start(now);
  put_to_sleep(worker, next > now && next != caf::actor_clock::time_point::max()
                           ? next - now
                           : no_deadline);
  return false;
}

bool dispatcher::key_admits(work_record& record, time_point now,
                            worker_slot* batch) {
  auto& key = record.concurrency_key;
  if (key.empty()) // (A store that keeps no keys, e.g. PostgreSQL.)
    key = table_.concurrency_key(record.id.operation);
  if (key.empty())
    return true;
  if (!keys_.may_start(key, table_.held_of(key), now)) {
    keys_.park(std::move(record));
    return false;
  }
  if (batch == nullptr)
    keys_.started(key, now);
  else if (keys_.hold(key))
    batch->key_tokens.push_back(key); // (Settled when the batch reports.)
  return true;
}

dispatcher::record_batch dispatcher::take_parked(size_t n) {
  return keys_.take(fx_.now(), n, [this](const std::string& key) {
    return table_.held_of(key);
  });
}

size_t dispatcher::startable_keys() {
  return keys_.startable(fx_.now(), [this](const std::string& key) {
    return table_.held_of(key);
  });
}

void dispatcher::paused() {
  take_back_all();
}

void dispatcher::resumed() {
  link_.send(exchange::count{});
}

void dispatcher::batch_done(worker_slot& slot) {
  if (slot.gated == 0 && slot.key_tokens.empty())
    return;
  auto now = fx_.now();
  if (slot.gated > 0)
    gate_.settle(now, slot.gated);
  slot.gated = 0;
  for (auto& key : slot.key_tokens)
    keys_.settle(key, now);
  slot.key_tokens.clear();
  wake_for_available();
}

} // namespace pool
