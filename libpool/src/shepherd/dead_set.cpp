#include "pool/detail/dead_set.hpp"

namespace pool {

dead_set::dead_set(size_t max_jobs, caf::timespan max_age)
    : max_jobs_(max_jobs), max_age_(max_age) {
  // nop
}

void dead_set::add(dead_job x, time_point now) {
  if (!enabled())
    return;
  if (auto old = by_id_.find(x.id); old != by_id_.end())
    erase(old); // (An id comes once; a store may list one again.)
  if (x.state != job_state::failed)
    ++count_of(x.state);
  by_age_.emplace(x.failed_at, x.id);
  auto id = x.id;
  by_id_.emplace(id, std::move(x));
  while (by_id_.size() > max_jobs_)
    drop_oldest();
  expire(now);
}

void dead_set::expire(time_point now) {
  while (!by_age_.empty() && now - by_age_.begin()->first > max_age_)
    drop_oldest();
  while (!discard_order_.empty()
         && now - discard_order_.front().first > max_age_) {
    discarded_ids_.erase(discard_order_.front().second);
    discard_order_.pop_front();
  }
}

const dead_job* dead_set::find(uint64_t id) const {
  auto i = by_id_.find(id);
  return i != by_id_.end() ? &i->second : nullptr;
}

std::optional<dead_job> dead_set::take(uint64_t id) {
  auto i = by_id_.find(id);
  if (i == by_id_.end())
    return std::nullopt;
  auto result = std::move(i->second);
  erase(i);
  return result;
}

bool dead_set::discard(uint64_t id, time_point now) {
  if (!take(id))
    return false;
  discarded_ids_.insert(id);
  discard_order_.emplace_back(now, id);
  while (discard_order_.size() > max_jobs_) {
    discarded_ids_.erase(discard_order_.front().second);
    discard_order_.pop_front();
  }
  return true;
}

void dead_set::erase(std::map<uint64_t, dead_job>::iterator i) {
  if (i->second.state != job_state::failed)
    --count_of(i->second.state);
  by_age_.erase({i->second.failed_at, i->first});
  by_id_.erase(i);
}

void dead_set::drop_oldest() {
  erase(by_id_.find(by_age_.begin()->second));
  ++dropped_;
}

} // namespace pool
