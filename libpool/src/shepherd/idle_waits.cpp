#include "pool/detail/idle_waits.hpp"

#include <utility>

namespace pool {

void idle_waits::count_down(uint64_t intake) {
  for (size_t i = 0; i < waits_.size();) {
    auto& w = waits_[i];
    if (intake <= w.last && --w.left == 0) {
      done_.push_back(std::move(w.promise));
      waits_[i] = std::move(waits_.back());
      waits_.pop_back();
      continue;
    }
    ++i;
  }
}

bool idle_waits::wait(caf::response_promise promise) {
  if (pending_ == 0) {
    done_.push_back(std::move(promise));
    return false;
  }
  waits_.push_back(wait_entry{intake_, pending_, std::move(promise)});
  return true;
}

std::vector<caf::response_promise> idle_waits::take_all() {
  std::vector<caf::response_promise> result;
  for (auto& w : waits_)
    result.push_back(std::move(w.promise));
  waits_.clear();
  for (auto& p : done_)
    result.push_back(std::move(p));
  done_.clear();
  return result;
}

} // namespace pool
