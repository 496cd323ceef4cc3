#include "pool/detail/operation_table.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>
#include <caf/actor_control_block.hpp>

namespace pool {

uint64_t operation_table::add(operation op, time_point now,
                              const operation_policy& policy) {
  auto id = next_id_++;
  adopt(id, std::move(op), now, policy);
  return id;
}

uint64_t operation_table::add_plain(caf::message&& payload, reply_to&& caller,
                                    time_point now, uint64_t intake) {
  auto id = next_id_++;
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = slab_.add();
  }
  ++size_;
  auto& op = slab_[index];
  op.payload = std::move(payload);
  op.caller = std::move(caller);
  op.intake = intake;
  op.submitted_at = now;
  op.stamp = now;
  file(id, index);
  ++op.wait_seq_;
  op.due_counted_ = true;
  ++due_;
  return id;
}

namespace {

bool is_default(const operation_policy& x) noexcept {
  return x.max_attempts == 0 && x.priority == 0 &&
         x.attempt_timeout == caf::timespan::zero();
}

} // namespace

void operation_table::adopt(uint64_t id, operation op, time_point now,
                            const operation_policy& policy,
                            bool follow_ids) {
  if (follow_ids)
    next_id_ = std::max(next_id_, id + 1);
  auto index = index_of(id);
  if (index != npos) {
    slab_[index] = std::move(op); // (Never done: ids are adopted once.)
  } else {
    index = store(std::move(op));
    file(id, index);
  }
  auto& slot = slab_[index];
  slot.phase = operation_phase::queued;
  slot.holder = worker_ref{};
  slot.own_policy_ = !is_default(policy);
  if (slot.own_policy_)
    policies_[id] = policy;
  enter_wait(id, slot, now);
}

operation_policy operation_table::policy(uint64_t id,
                                         const operation& op) const {
  if (!op.own_policy_)
    return {};
  auto i = policies_.find(id);
  return i != policies_.end() ? i->second : operation_policy{};
}

uint32_t operation_table::store(operation op) {
  ++size_;
  if (!free_.empty()) {
    auto index = free_.back();
    free_.pop_back();
    slab_[index] = std::move(op);
    return index;
  }
  auto index = slab_.add();
  slab_[index] = std::move(op);
  return index;
}

void operation_table::file(uint64_t id, uint32_t index) {
  if (ring_.empty() && id >= ring_base_)
    ring_base_ = id; // (Any id may start an empty ring.)
  if (id < ring_base_ || id - ring_base_ > ring_.size() + 64) {
    old_.emplace(id, index); // Out of order, or far ahead.
    return;
  }
  if (id - ring_base_ == ring_.size()) {
    ring_.push_back(index); // (The usual case: the next id.)
    ++ring_live_;
    return;
  }
  if (id - ring_base_ > ring_.size())
    ring_.resize(id - ring_base_, npos);
  if (id - ring_base_ == ring_.size())
    ring_.push_back(index);
  else
    ring_[id - ring_base_] = index;
  ++ring_live_;
  trim_ring();
}

void operation_table::trim_ring() {
  while (!ring_.empty() && ring_.front() == npos) {
    ring_.pop_front();
    ++ring_base_;
  }
  // Sparse: an old entry keeps many ended ones in the ring.
  while (ring_.size() > 1024 && ring_live_ * 4 < ring_.size()) {
    if (ring_.front() != npos) {
      old_.emplace(ring_base_, ring_.front());
      --ring_live_;
    }
    ring_.pop_front();
    ++ring_base_;
  }
}

void operation_table::wait(uint64_t id, uint32_t attempt, time_point due,
                           time_point now) {
  auto op = find(id);
  if (op == nullptr)
    return;
  if (op->phase == operation_phase::held) {
    --held_;
    count_key(id, -1);
    leave_ahead(*op);
    op->holder = worker_ref{};
    if (!op->returned_) {
      op->returned_ = true;
      ++returned_;
    }
  } else {
    leave_wait(*op);
  }
  op->phase = operation_phase::queued;
  op->attempt = attempt;
  op->stamp = due;
  enter_wait(id, *op, now);
}

void operation_table::hold(uint64_t id, worker_ref worker, time_point now) {
  if (auto op = find(id))
    hold(id, *op, worker, now);
}

void operation_table::hold(uint64_t id, operation& op, worker_ref worker,
                           time_point now) {
  if (op.phase != operation_phase::held) {
    leave_wait(op);
    ++held_;
    count_key(id, 1);
  }
  // Held for good (started, or sent to a worker that runs it next): it no
  // longer waits, put back or not.
  if (op.returned_) {
    op.returned_ = false;
    --returned_;
  }
  leave_ahead(op);
  op.phase = operation_phase::held;
  op.holder = worker;
  op.stamp = now;
}

void operation_table::send_ahead(uint64_t id, operation& op,
                                 worker_ref worker) {
  // Sent ahead, it still counts as waiting (`waiting()`): one that was put
  // back stays counted as such until it starts.
  auto returned = op.returned_;
  hold(id, op, worker, op.stamp); // (Keeps its due time as its stamp.)
  op.ahead_ = true;
  ++ahead_;
  if (returned) {
    op.returned_ = true;
    ++returned_;
  }
}

void operation_table::leave_ahead(operation& op) {
  if (op.ahead_) {
    op.ahead_ = false;
    --ahead_;
  }
}

operation_table::ended operation_table::end(uint64_t id) {
  ended result;
  auto index = index_of(id);
  if (index == npos)
    return result;
  auto& op = slab_[index];
  result.id = id;
  if (op.phase == operation_phase::held) {
    --held_;
    count_key(id, -1);
    if (op.ahead_)
      --ahead_; // (The flag stays: the ended operation tells it.)
  }
  result.op = std::move(op);
  // (Moved from: the payload and the caller are gone; the rest is reset.)
  op.holder = worker_ref{};
  op.attempt = 1;
  op.tracked = op.typed = false;
  op.phase = operation_phase::queued;
  op.wait_seq_ = 0;
  op.due_counted_ = op.returned_ = op.ahead_ = op.own_policy_ = false;
  --size_;
  free_.push_back(index);
  if (id - ring_base_ < ring_.size()) {
    ring_[id - ring_base_] = npos;
    --ring_live_;
    trim_ring();
  } else {
    old_.erase(id);
  }
  if (result.op.own_policy_)
    policies_.erase(id);
  if (result.op.phase != operation_phase::held)
    leave_wait(result.op);
  if (result.op.returned_)
    --returned_;
  if (auto x = find_extras(id)) {
    result.extras = std::move(*x);
    extras_.erase(id);
    if (!result.extras->key.empty())
      keys_.erase(result.extras->key);
    if (result.extras->watched)
      unwatch(result.extras->caller);
  }
  return result;
}

size_t operation_table::available(time_point now) {
  // Delayed operations that fell due are counted as due from now on.
  while (!delayed_.empty() && delayed_.front().due <= now) {
    std::pop_heap(delayed_.begin(), delayed_.end(), later{});
    auto entry = delayed_.back();
    delayed_.pop_back();
    auto op = find(entry.id);
    if (op != nullptr && op->phase != operation_phase::held &&
        !op->due_counted_ && op->wait_seq_ == entry.seq) {
      op->due_counted_ = true;
      ++due_;
    }
  }
  return due_;
}

std::optional<operation_table::time_point>
operation_table::oldest_due(time_point now) {
  std::optional<time_point> result;
  if (available(now) == 0)
    return result;
  for_each([&](uint64_t, const operation& op) {
    if (op.phase == operation_phase::queued && op.stamp <= now &&
        (!result || op.stamp < *result))
      result = op.stamp;
  });
  return result;
}

std::vector<uint64_t> operation_table::ids() const {
  std::vector<uint64_t> result;
  result.reserve(size_);
  const_cast<operation_table*>(this)->for_each(
      [&](uint64_t id, const operation&) { result.push_back(id); });
  return result;
}

uint64_t operation_table::find_key(const std::string& key) const {
  auto i = keys_.find(key);
  return i != keys_.end() ? i->second : 0;
}

void operation_table::count_own_key(uint64_t id, int delta) {
  auto extras = find_extras(id);
  if (extras == nullptr || extras->concurrency_key.empty())
    return;
  auto& n = held_keys_[extras->concurrency_key];
  n += delta;
  if (n == 0)
    held_keys_.erase(extras->concurrency_key);
}

size_t operation_table::held_of(const std::string& key) const {
  auto i = held_keys_.find(key);
  return i != held_keys_.end() ? static_cast<size_t>(i->second) : 0;
}

work_record operation_table::own_record_of(const attempt_id& id,
                                           const operation& op) {
  work_record result{id, op.payload};
  result.priority = policy(id.operation, op).priority;
  if (auto extras = find_extras(id.operation))
    result.concurrency_key = extras->concurrency_key;
  return result;
}

std::optional<job_options> operation_table::options_of(uint64_t id,
                                                       const operation& op) {
  auto& key = concurrency_key(id);
  auto own = policy(id, op);
  if (is_default(own) && key.empty())
    return std::nullopt;
  job_options result;
  result.max_attempts(own.max_attempts)
      .priority(own.priority)
      .attempt_timeout(own.attempt_timeout)
      .concurrency_key(key);
  return result;
}

const std::string& operation_table::concurrency_key(uint64_t id) {
  static const std::string none;
  auto extras = find_extras(id);
  return extras != nullptr ? extras->concurrency_key : none;
}

void operation_table::set_key(uint64_t id, std::string key) {
  keys_[key] = id;
  extras_of(id).key = std::move(key);
}

bool operation_table::watch(uint64_t id, const caf::actor_addr& caller) {
  auto& extras = extras_of(id);
  extras.caller = caller;
  extras.watched = true;
  auto& watch = callers_[caf::actor_cast<caf::actor_control_block*>(caller)];
  watch.addr = caller;
  return watch.pending++ == 0;
}

void operation_table::caller_down(const caf::actor_addr& caller) {
  auto key = caf::actor_cast<caf::actor_control_block*>(caller);
  if (auto i = callers_.find(key); i != callers_.end())
    i->second.down = true;
}

bool operation_table::orphaned(uint64_t id) {
  auto extras = find_extras(id);
  if (extras == nullptr || !extras->watched)
    return false;
  auto i =
      callers_.find(caf::actor_cast<caf::actor_control_block*>(extras->caller));
  return i != callers_.end() && i->second.down;
}

void operation_table::unwatch(const caf::actor_addr& caller) {
  auto i = callers_.find(caf::actor_cast<caf::actor_control_block*>(caller));
  if (i == callers_.end() || --i->second.pending > 0)
    return;
  if (!i->second.down)
    unwatched_.push_back(caller);
  callers_.erase(i);
}

std::vector<caf::actor_addr> operation_table::unwatched() {
  std::vector<caf::actor_addr> result;
  result.swap(unwatched_);
  return result;
}

void operation_table::enter_wait(uint64_t id, operation& op, time_point now) {
  ++op.wait_seq_;
  op.due_counted_ = op.stamp <= now;
  if (op.due_counted_) {
    ++due_;
  } else {
    delayed_.push_back(delayed_entry{op.stamp, id, op.wait_seq_});
    std::push_heap(delayed_.begin(), delayed_.end(), later{});
    if (delayed_.size() > 64 && delayed_.size() > 2 * size_)
      compact();
  }
}

void operation_table::compact() {
  // Drops heap entries of operations that ended or moved on.
  auto stale = [this](const delayed_entry& x) {
    auto op = find(x.id);
    return op == nullptr || op->due_counted_ || op->wait_seq_ != x.seq ||
           op->phase == operation_phase::held;
  };
  delayed_.erase(std::remove_if(delayed_.begin(), delayed_.end(), stale),
                 delayed_.end());
  std::make_heap(delayed_.begin(), delayed_.end(), later{});
}

void operation_table::leave_wait(operation& op) {
  if (op.due_counted_) {
    op.due_counted_ = false;
    --due_;
  }
  // A delayed entry left in the heap no longer matches `wait_seq_`.
  ++op.wait_seq_;
}

} // namespace pool
