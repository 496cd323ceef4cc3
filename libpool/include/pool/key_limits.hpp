#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include "pool/flow_gate.hpp"
#include "pool/work_record.hpp"

namespace pool {

/// Limits on the attempts of one concurrency key
/// (`job_options::concurrency_key`).
struct key_limit {
  /// Most attempts of the key held by workers at once (1: one after the
  /// other); none: no limit. 0 is refused.
  std::optional<uint32_t> concurrency;
  /// Most attempts of the key started per period; none: no limit.
  std::optional<start_rate> rate;
};

/// Per-key flow control of a pool and its priority aging
/// (`pool_options::key_flow`; docs/operations.md "Per-key limits").
class key_flow_options {
public:
  /// Limits of every concurrency key that has none of its own.
  key_flow_options& every_key(key_limit x) {
    every_key_ = x;
    return *this;
  }

  /// Limits of `key` (instead of `every_key`'s).
  key_flow_options& key(std::string key, key_limit x) {
    keys_[std::move(key)] = x;
    return *this;
  }

  /// A waiting entry gains one priority level per `step` it has been due
  /// (no priority starves). Default: strict priorities.
  key_flow_options& priority_aging(caf::timespan step) {
    aging_ = step;
    return *this;
  }

  /// The limits of `key`; null for none (an empty key never has any).
  const key_limit* limit_of(const std::string& key) const;

  /// The limits of every key without its own; none if unset.
  const std::optional<key_limit>& every_key() const noexcept {
    return every_key_;
  }

  /// The keys with limits of their own.
  const std::unordered_map<std::string, key_limit>& keys() const noexcept {
    return keys_;
  }

  /// Whether any key has a concurrency limit.
  bool concurrency_limited() const noexcept;

  /// Whether any key has a limit.
  bool limited() const noexcept {
    return every_key_.has_value() || !keys_.empty();
  }

  /// Whether any key has a rate limit.
  bool rate_limited() const noexcept;

  const std::optional<caf::timespan>& priority_aging() const noexcept {
    return aging_;
  }

  /// `invalid_option` naming the bad field, e.g.
  /// `key_limit[tenant-a].concurrency`.
  caf::error validate() const;

private:
  std::optional<key_limit> every_key_;
  std::unordered_map<std::string, key_limit> keys_;
  std::optional<caf::timespan> aging_;
};

/// The dispatcher's per-key gate: it asks `may_start` before every start
/// of an entry with a concurrency key, keeps the entries whose key may not
/// start yet (parked, FIFO per key) and gives them back, taking turns
/// between keys, once their key may start (an attempt of the key ended, or
/// a token came back). Held attempts per key are counted by the caller
/// (the operation table knows them). Plain value; the clock is passed in.
class key_gate {
public:
  using time_point = caf::actor_clock::time_point;

  explicit key_gate(key_flow_options opts = {});

  bool limited() const noexcept {
    return opts_.limited();
  }

  /// Whether any key has a rate limit.
  bool rate_limited() const noexcept {
    return rate_limited_;
  }

  /// Whether an attempt of `key`, which has `held` attempts held by
  /// workers, may start at `now`.
  bool may_start(const std::string& key, size_t held, time_point now);

  /// An attempt of `key` started at `now` (spends a token of its rate).
  void started(const std::string& key, time_point now);

  /// An attempt of `key` goes out in a batch: it starts at a time the gate
  /// does not see, so its token stays spent until `settle` at the batch's
  /// end (see `flow_gate::hold`). Returns whether `key` has a rate (else
  /// there is nothing to settle).
  bool hold(const std::string& key);

  /// The batch that held a token of `key` ended at `now`.
  void settle(const std::string& key, time_point now);

  /// Keeps `x` until its key may start.
  void park(work_record x);

  /// Takes up to `n` parked entries whose key may start at `now`, one per
  /// key in turn; `held(key)` says how many attempts of a key are held.
  template <class Held>
  std::vector<work_record> take(time_point now, size_t n, Held held) {
    std::vector<work_record> result;
    for (size_t turns = turns_.size(); turns > 0 && result.size() < n;
         --turns) {
      auto key = std::move(turns_.front());
      turns_.pop_front();
      auto& lane = parked_[key];
      if (may_start(key, held(key), now)) { // (one per key and take)
        result.push_back(std::move(lane.front()));
        lane.pop_front();
        --size_;
      }
      if (lane.empty())
        parked_.erase(key);
      else
        turns_.push_back(std::move(key));
    }
    return result;
  }

  /// How many keys with parked entries may start one now.
  template <class Held>
  size_t startable(time_point now, Held held) {
    size_t result = 0;
    for (auto& key : turns_)
      if (may_start(key, held(key), now))
        ++result;
    return result;
  }

  /// When a token of a key with parked entries comes back, if one is
  /// waiting for a token; none otherwise.
  std::optional<time_point> next_token(time_point now);

  /// Removes the parked entries of `operation`; returns how many.
  size_t remove(uint64_t operation);

  /// Parked entries.
  size_t parked() const noexcept {
    return size_;
  }

private:
  /// The rate gate of `key`, if it has a rate limit.
  flow_gate* rate_of(const std::string& key);

  key_flow_options opts_;
  bool rate_limited_ = false;
  std::unordered_map<std::string, flow_gate> rates_;
  std::unordered_map<std::string, std::deque<work_record>> parked_;
  /// Keys with parked entries, in turn order.
  std::deque<std::string> turns_;
  size_t size_ = 0;
};

} // namespace pool
