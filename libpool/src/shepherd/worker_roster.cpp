#include "pool/detail/worker_roster.hpp"

#include <algorithm>

namespace pool {

std::string to_string(worker_phase x) {
  switch (x) {
    case worker_phase::sleeping:
      return "sleeping";
    case worker_phase::waiting:
      return "waiting";
    case worker_phase::working:
      return "working";
  }
  return "?";
}

worker_roster::worker_roster() = default;

worker_ref worker_roster::add(worker_handle who, bool joined, time_point now) {
  auto key = who.key;
  auto& handle = who.actor;
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  auto& slot = slots_[index];
  auto generation = slot.generation_;
  slot = worker_slot{};
  slot.generation_ = generation == 0 ? next_generation_++ : generation;
  slot.actor_id = handle ? handle.id() : reinterpret_cast<uintptr_t>(key);
  slot.handle = std::move(handle);
  slot.key = key;
  slot.joined = joined;
  slot.phase = worker_phase::sleeping;
  slot.slept_at = now;
  slot.since = now;
  if (joined)
    ++joined_;
  link(index, worker_phase::sleeping);
  auto ref = ref_of(index);
  keys_.emplace(key, ref);
  return ref;
}

void worker_roster::remove(worker_ref ref) {
  auto slot = get(ref);
  if (slot == nullptr)
    return;
  if (slot->retiring)
    set_retiring(ref, false);
  unlink(ref.index);
  if (slot->joined)
    --joined_;
  keys_.erase(slot->key);
  slot->key = nullptr;
  slot->handle = nullptr;
  slot->held.clear();
  // A new generation: the old name never matches again.
  slot->generation_ = next_generation_++;
  if (next_generation_ == 0)
    next_generation_ = 1;
  free_.push_back(ref.index);
}

worker_ref worker_roster::find(const void* key) const {
  auto i = keys_.find(key);
  return i != keys_.end() ? i->second : worker_ref{};
}

bool worker_roster::consistent() const noexcept {
  return sleeping() + waiting() + busy() == size();
}

void worker_roster::set_retiring(worker_ref ref, bool retiring) {
  auto slot = get(ref);
  if (slot == nullptr || slot->retiring == retiring)
    return;
  slot->retiring = retiring;
  if (retiring) {
    slot->retiring_pos_ = retiring_.size();
    retiring_.push_back(ref.index);
  } else {
    // Swap with the last one: O(1).
    auto pos = slot->retiring_pos_;
    auto last = retiring_.back();
    retiring_[pos] = last;
    slots_[last].retiring_pos_ = pos;
    retiring_.pop_back();
  }
}

} // namespace pool
