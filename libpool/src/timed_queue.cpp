#include "pool/timed_queue.hpp"

#include <algorithm>

namespace pool {

// -- band ---------------------------------------------------------------------

work_record timed_queue::ready_entry::take(int32_t priority,
                                           std::string key) && {
  work_record result{attempt_id{operation, attempt}, std::move(payload),
                     budget};
  result.priority = priority;
  result.concurrency_key = std::move(key);
  result.max_attempts = max_attempts;
  return result;
}

void timed_queue::ready_entry::take_plain(std::vector<work_record>& out) && {
  auto& result = out.emplace_back(attempt_id{operation, attempt},
                                  std::move(payload), budget);
  result.max_attempts = max_attempts;
}

void timed_queue::band::push(ready_entry x, std::string key) {
  if (key.empty()) {
    plain_lane().push_back(std::move(x));
    return;
  }
  ++size;
  auto& to = lanes[key];
  if (to.empty())
    turns.push_back(std::move(key));
  to.push_back(std::move(x));
}

const timed_queue::ready_entry& timed_queue::band::next() const {
  auto& key = turns.front();
  return key.empty() ? plain.front() : lanes.find(key)->second.front();
}

std::pair<timed_queue::ready_entry, std::string> timed_queue::band::pop() {
  --size;
  auto& key = turns.front();
  if (key.empty()) {
    std::pair<ready_entry, std::string> result{std::move(plain.front()), {}};
    plain.pop_front();
    if (plain.empty()) {
      turns.pop_front();
    } else if (turns.size() > 1) {
      turns.pop_front();
      turns.emplace_back(); // (Its next turn comes after the other keys'.)
    }
    return result;
  }
  auto i = lanes.find(key);
  std::pair<ready_entry, std::string> result{std::move(i->second.front()),
                                             std::move(turns.front())};
  i->second.pop_front();
  turns.pop_front();
  if (i->second.empty())
    lanes.erase(i);
  else
    turns.push_back(result.second);
  return result;
}

size_t timed_queue::band::remove(uint64_t operation) {
  auto of = [operation](const ready_entry& x) {
    return x.operation == operation;
  };
  auto erase = [&](lane& from) {
    auto i = std::remove_if(from.begin(), from.end(), of);
    auto n = static_cast<size_t>(from.end() - i);
    from.erase(i, from.end());
    return n;
  };
  size_t removed = erase(plain);
  for (auto i = lanes.begin(); i != lanes.end();) {
    removed += erase(i->second);
    i = i->second.empty() ? lanes.erase(i) : std::next(i);
  }
  if (removed > 0) {
    size -= removed;
    turns.erase(std::remove_if(turns.begin(), turns.end(),
                               [this](const std::string& key) {
                                 return key.empty() ? plain.empty()
                                                    : lanes.count(key) == 0;
                               }),
                turns.end());
  }
  return removed;
}

// -- timed_queue --------------------------------------------------------------

void timed_queue::promote_due(time_point now) {
  while (!delayed_.empty() && delayed_.front().due <= now) {
    std::pop_heap(delayed_.begin(), delayed_.end(), later{});
    auto& x = delayed_.back();
    auto priority = x.record.priority;
    auto key = std::move(x.record.concurrency_key);
    bands_[priority].push(ready_entry{x.due, std::move(x.record)},
                          std::move(key));
    ++ready_;
    delayed_.pop_back();
  }
}

uint64_t timed_queue::push(work_record x, time_point due, time_point now) {
  // Promote first so that entries that fell due earlier stay ahead of this
  // one: each band remains ordered by due time.
  promote(now);
  auto seq = seq_++;
  if (due <= now && x.priority == 0 && x.concurrency_key.empty() &&
      bands_.size() == 1 && bands_.begin()->first == 0) {
    // The usual entry: band 0 (the only one) without a lookup.
    bands_.begin()->second.push(ready_entry{now, std::move(x)}, {});
    ++ready_;
  } else if (due <= now) {
    auto priority = x.priority;
    auto key = std::move(x.concurrency_key);
    bands_[priority].push(ready_entry{now, std::move(x)}, std::move(key));
    ++ready_;
  } else {
    delayed_.push_back(delayed_entry{due, seq, std::move(x)});
    std::push_heap(delayed_.begin(), delayed_.end(), later{});
  }
  return seq;
}

void timed_queue::push_all(std::vector<work_record>& records,
                           time_point now) {
  promote(now);
  if (bands_.empty())
    bands_[0]; // (Band 0 stays once made.)
  auto plain_only = bands_.size() == 1 && bands_.begin()->first == 0;
  auto& band0 = bands_.begin()->second;
  for (auto& x : records) {
    if (plain_only && x.priority == 0 && x.concurrency_key.empty()) {
      ++seq_;
      band0.push_plain(now, std::move(x));
      ++ready_;
    } else {
      push(std::move(x), now, now);
      plain_only = bands_.size() == 1 && bands_.begin()->first == 0;
    }
  }
}

void timed_queue::restore(work_record x, time_point due, uint64_t seq) {
  // Through the heap even when due: the next promote puts it in (due, seq)
  // order among the other restored entries.
  delayed_.push_back(delayed_entry{due, seq, std::move(x)});
  std::push_heap(delayed_.begin(), delayed_.end(), later{});
  seq_ = std::max(seq_, seq + 1);
}

std::map<int32_t, timed_queue::band, std::greater<>>::iterator
timed_queue::next_band(time_point now) {
  // (Only band 0 stays when empty: most queues use no other, and keeping
  // it saves allocations each time the queue runs empty.)
  auto best = bands_.begin();
  while (best->second.size == 0)
    ++best;
  if (!aging_ || bands_.size() < 2)
    return best;
  // Each band competes with its entry next in turn, raised by its wait.
  auto step = aging_->count();
  auto level = [&](const auto& kvp) {
    auto waited = (now - kvp.second.next().since).count();
    return static_cast<int64_t>(kvp.first)
           + (waited > 0 ? waited / step : int64_t{0});
  };
  auto best_level = level(*best);
  for (auto i = std::next(best); i != bands_.end(); ++i)
    if (auto x = i->second.size > 0 ? level(*i) : best_level;
        x > best_level) {
      best = i;
      best_level = x;
    }
  return best;
}

std::optional<work_record> timed_queue::pop_due(time_point now) {
  promote(now);
  if (ready_ == 0)
    return std::nullopt;
  auto i = next_band(now);
  auto priority = i->first;
  auto [entry, key] = i->second.pop();
  if (i->second.size == 0 && i->first != 0)
    bands_.erase(i);
  --ready_;
  return std::move(entry).take(priority, std::move(key));
}

size_t timed_queue::pop_due_into(time_point now, size_t n,
                                 std::vector<work_record>& out) {
  promote(now);
  size_t got = 0;
  while (got < n && ready_ > 0) {
    auto& first = bands_.begin()->second;
    if (bands_.size() == 1 && bands_.begin()->first == 0 &&
        first.lanes.empty()) {
      // Band 0 alone and no keys: its plain lane, in order.
      auto k = std::min(n - got, first.plain.size());
      for (size_t i = 0; i < k; ++i) {
        std::move(first.plain.front()).take_plain(out);
        first.plain.pop_front();
      }
      first.size -= k;
      ready_ -= k;
      got += k;
      if (first.plain.empty())
        first.turns.clear();
      continue;
    }
    auto x = pop_due(now);
    out.push_back(std::move(*x));
    ++got;
  }
  return got;
}

size_t timed_queue::remove(uint64_t operation) {
  auto before = size();
  for (auto i = bands_.begin(); i != bands_.end();) {
    ready_ -= i->second.remove(operation);
    i = i->second.size == 0 && i->first != 0 ? bands_.erase(i) : std::next(i);
  }
  auto removed_delayed = std::remove_if(
      delayed_.begin(), delayed_.end(), [operation](const delayed_entry& x) {
        return x.record.id.operation == operation;
      });
  if (removed_delayed != delayed_.end()) {
    delayed_.erase(removed_delayed, delayed_.end());
    std::make_heap(delayed_.begin(), delayed_.end(), later{});
  }
  return before - size();
}

void timed_queue::clear() noexcept {
  bands_.clear();
  ready_ = 0;
  delayed_.clear();
}

} // namespace pool
