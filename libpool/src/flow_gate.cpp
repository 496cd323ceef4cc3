#include "pool/flow_gate.hpp"

#include <algorithm>
#include <string>

#include "pool/errors.hpp"

namespace pool {

caf::error start_rate::validate(const char* field) const {
  auto bad = [field](const char* why) {
    return caf::make_error(pool_errc::invalid_option, std::string{field},
                           std::string{why});
  };
  if (starts == 0)
    return bad("the number of starts per period must be at least 1 (to "
               "stop starting work, pause the pool)");
  if (starts > max_starts)
    return bad("at most 1000000 starts per period; for more, use a "
               "shorter period");
  if (per <= caf::timespan::zero())
    return bad("the period must be greater than zero");
  return caf::none;
}

flow_gate::flow_gate(std::optional<start_rate> limit) : limit_(limit) {
  // nop
}

void flow_gate::expire(time_point now) {
  if (!limit_)
    return;
  while (!spent_.empty() && spent_.front() + limit_->per <= now)
    spent_.pop_front();
}

size_t flow_gate::allowed_limited(time_point now, size_t n) {
  if (paused_)
    return 0;
  if (!limit_)
    return n;
  expire(now);
  auto used = spent_.size() + reserved_ + held_;
  if (used >= limit_->starts)
    return 0;
  return static_cast<size_t>(
      std::min<uint64_t>(n, limit_->starts - used));
}

void flow_gate::spend(time_point now, size_t n) {
  expire(now);
  for (size_t i = 0; i < n; ++i)
    spent_.push_back(now);
}

void flow_gate::settle(time_point now, size_t n) {
  n = std::min(n, held_);
  held_ -= n;
  if (limit_)
    spend(now, n);
}

flow_gate::time_point flow_gate::next_start(time_point now) {
  if (paused_)
    return time_point::max();
  if (!limit_)
    return now;
  expire(now);
  auto used = spent_.size() + reserved_ + held_;
  if (used < limit_->starts)
    return now;
  // Reserved and held tokens come back when their starts (or release, or
  // batch) happen; the oldest spent token one period after it was spent.
  if (spent_.empty())
    return now;
  return spent_.front() + limit_->per;
}

} // namespace pool
