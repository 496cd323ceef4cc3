#include "pool/detail/dead_set.hpp"

namespace pool {

dead_set::dead_set(size_t max_jobs, caf::timespan max_age)
    : max_jobs_(max_jobs), max_age_(max_age) {
  // nop
}

void dead_set::add(dead_job x, time_point now) {
  if (!enabled())
    return;
  if (auto old = by_id_.find(x.id); old != by_id_.end()) {
    // (An id comes once; a store may list one again after a restart.)
    by_age_.erase({old->second.failed_at, x.id});
    by_id_.erase(old);
  }
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
}

const dead_job* dead_set::find(uint64_t id) const {
  auto i = by_id_.find(id);
  return i != by_id_.end() ? &i->second : nullptr;
}

std::optional<dead_job> dead_set::take(uint64_t id) {
  auto i = by_id_.find(id);
  if (i == by_id_.end())
    return std::nullopt;
  by_age_.erase({i->second.failed_at, id});
  auto result = std::move(i->second);
  by_id_.erase(i);
  return result;
}

void dead_set::drop_oldest() {
  auto oldest = by_age_.begin();
  by_id_.erase(oldest->second);
  by_age_.erase(oldest);
  ++dropped_;
}

} // namespace pool
