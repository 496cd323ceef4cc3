#include "pool/admission.hpp"

namespace pool {

admission::admission(std::optional<size_t> capacity, size_t max_parked)
    : capacity_(capacity), max_parked_(max_parked) {
  // nop
}

bool admission::has_room(size_t waiting) const {
  // (`waiting`: the operations admitted and waiting; see shepherd_core.)
  return !capacity_ || waiting + looking_up_ < *capacity_;
}

admission_verdict admission::check(size_t waiting) const {
  if (closed_)
    return admission_verdict::closed;
  // A new submit never overtakes a parked one.
  if (parked_.empty() && has_room(waiting))
    return admission_verdict::accept;
  return parked_.size() < max_parked_ ? admission_verdict::park
                                      : admission_verdict::reject;
}

void admission::park(submission sub) {
  parked_.push_back(std::move(sub));
}

std::optional<submission> admission::unpark(size_t waiting) {
  if (parked_.empty() || !has_room(waiting))
    return std::nullopt;
  auto result = std::move(parked_.front());
  parked_.pop_front();
  return result;
}

std::deque<submission> admission::take_parked() {
  std::deque<submission> result;
  result.swap(parked_);
  return result;
}

bool admission::join_lookup(submission& sub) {
  auto i = lookups_.find(sub.key);
  if (i == lookups_.end())
    return false;
  ++looking_up_;
  i->second.push_back(std::move(sub));
  return true;
}

void admission::start_lookup(submission sub) {
  ++looking_up_;
  auto key = sub.key;
  lookups_[key].push_back(std::move(sub));
}

std::vector<submission> admission::end_lookup(const std::string& key) {
  std::vector<submission> result;
  auto i = lookups_.find(key);
  if (i == lookups_.end())
    return result;
  result = std::move(i->second);
  lookups_.erase(i);
  looking_up_ -= result.size();
  return result;
}

std::vector<submission> admission::take_lookups() {
  std::vector<submission> result;
  for (auto& kvp : lookups_)
    for (auto& sub : kvp.second)
      result.push_back(std::move(sub));
  lookups_.clear();
  looking_up_ = 0;
  return result;
}

} // namespace pool
