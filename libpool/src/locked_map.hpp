#pragma once

// A map that threads share, for the library's few process-wide registries
// (stores by kind, error renderers by category, timeout codes): written
// rarely (at start-up), read from any thread. Private to pool::core.

#include <atomic>
#include <map>
#include <mutex>
#include <utility>

namespace pool::detail {

template <class Key, class Value>
class locked_map {
public:
  /// Maps `key` to `value`; a value that tests false (an empty function)
  /// removes the key.
  void set(const Key& key, Value value) {
    std::lock_guard<std::mutex> guard{mtx_};
    if (value)
      map_[key] = std::move(value);
    else
      map_.erase(key);
    size_ = map_.size();
  }

  /// The value of `key`, or a default-constructed one. Takes no lock while
  /// the map is empty (the usual case for most registries).
  Value get(const Key& key) const {
    if (size_.load(std::memory_order_acquire) == 0)
      return Value{};
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = map_.find(key);
    return i != map_.end() ? i->second : Value{};
  }

private:
  mutable std::mutex mtx_;
  std::map<Key, Value> map_;
  std::atomic<size_t> size_{0};
};

} // namespace pool::detail
