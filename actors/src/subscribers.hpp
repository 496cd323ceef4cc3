// The shepherd's event subscribers: who wants which kinds of `pool_event`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>

#include "pool/events.hpp"

namespace pool {

/// Subscribers and the union of their masks (`wants` is one test). Plain
/// value; the shepherd monitors whom `add` returns true for.
class subscriber_list {
public:
  /// Subscribes `who` to `mask`, or changes its mask; true when new.
  bool add(caf::actor who, uint32_t mask) {
    auto i = std::find_if(all_.begin(), all_.end(),
                          [&](const entry& x) { return x.handle == who; });
    auto fresh = i == all_.end();
    if (fresh)
      all_.push_back(entry{std::move(who), mask});
    else
      i->mask = mask;
    recount();
    return fresh;
  }

  void remove(const caf::actor_addr& who) {
    auto i = std::remove_if(all_.begin(), all_.end(), [&](const entry& x) {
      return x.handle.address() == who;
    });
    if (i == all_.end())
      return;
    all_.erase(i, all_.end());
    recount();
  }

  bool contains(const caf::actor_addr& who) const {
    return std::any_of(all_.begin(), all_.end(), [&](const entry& x) {
      return x.handle.address() == who;
    });
  }

  bool wants(event_kind kind) const noexcept {
    return (kinds_ & event_bit(kind)) != 0;
  }

  /// Calls `f(handle)` for each subscriber to `kind`.
  template <class F>
  void each(event_kind kind, F f) const {
    auto bit = event_bit(kind);
    for (auto& x : all_)
      if ((x.mask & bit) != 0)
        f(x.handle);
  }

  void clear() {
    all_.clear();
    kinds_ = 0;
  }

private:
  struct entry {
    caf::actor handle;
    uint32_t mask;
  };

  void recount() {
    kinds_ = 0;
    for (auto& x : all_)
      kinds_ |= x.mask;
  }

  std::vector<entry> all_;
  /// Union of the subscribers' masks.
  uint32_t kinds_ = 0;
};

} // namespace pool
