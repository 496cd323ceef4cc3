#include "pool/key_limits.hpp"

#include <algorithm>

#include "pool/errors.hpp"
#include "pool/job_options.hpp"

namespace pool {

// -- key_flow_options ---------------------------------------------------------

const key_limit* key_flow_options::limit_of(const std::string& key) const {
  if (key.empty())
    return nullptr;
  if (auto i = keys_.find(key); i != keys_.end())
    return &i->second;
  return every_key_ ? &*every_key_ : nullptr;
}

bool key_flow_options::concurrency_limited() const noexcept {
  if (every_key_ && every_key_->concurrency)
    return true;
  return std::any_of(keys_.begin(), keys_.end(),
                     [](const auto& kvp) { return kvp.second.concurrency; });
}

bool key_flow_options::rate_limited() const noexcept {
  if (every_key_ && every_key_->rate)
    return true;
  return std::any_of(keys_.begin(), keys_.end(),
                     [](const auto& kvp) { return kvp.second.rate; });
}

caf::error key_flow_options::validate() const {
  auto check = [](const std::string& field,
                  const key_limit& x) -> caf::error {
    if (x.concurrency && *x.concurrency == 0)
      return caf::make_error(pool_errc::invalid_option,
                             field + ".concurrency",
                             std::string{"must be at least 1 (1: one after "
                                         "the other; no limit: leave it "
                                         "unset)"});
    if (x.rate)
      return x.rate->validate((field + ".rate").c_str());
    return caf::none;
  };
  if (every_key_)
    if (auto err = check("key_limit[every key]", *every_key_))
      return err;
  for (auto& [key, limit] : keys_) {
    if (key.empty())
      return caf::make_error(pool_errc::invalid_option,
                             std::string{"key_limit"},
                             std::string{"the key must not be empty (entries "
                                         "without a concurrency key have no "
                                         "per-key limits)"});
    if (key.size() > job_options::max_key_size)
      return caf::make_error(pool_errc::invalid_option,
                             std::string{"key_limit"},
                             "the key must be at most "
                                 + std::to_string(job_options::max_key_size)
                                 + " bytes (got "
                                 + std::to_string(key.size()) + ")");
    if (auto err = check("key_limit[" + key + "]", limit))
      return err;
  }
  if (aging_ && *aging_ <= caf::timespan::zero())
    return caf::make_error(pool_errc::invalid_option,
                           std::string{"priority_aging"},
                           std::string{"the step must be greater than zero"});
  return caf::none;
}

// -- key_gate -----------------------------------------------------------------

key_gate::key_gate(key_flow_options opts)
    : opts_(std::move(opts)), rate_limited_(opts_.rate_limited()) {
  // nop
}

flow_gate* key_gate::rate_of(const std::string& key) {
  if (!rate_limited_)
    return nullptr;
  auto limit = opts_.limit_of(key);
  if (limit == nullptr || !limit->rate)
    return nullptr;
  auto i = rates_.find(key);
  if (i == rates_.end())
    i = rates_.emplace(key, flow_gate{limit->rate}).first;
  return &i->second;
}

bool key_gate::may_start(const std::string& key, size_t held,
                         time_point now) {
  auto limit = opts_.limit_of(key);
  if (limit == nullptr)
    return true;
  if (limit->concurrency && held >= *limit->concurrency)
    return false;
  auto rate = rate_of(key);
  return rate == nullptr || rate->allowed(now, 1) > 0;
}

void key_gate::started(const std::string& key, time_point now) {
  if (auto rate = rate_of(key))
    rate->started(now, 1);
}

bool key_gate::hold(const std::string& key) {
  auto rate = rate_of(key);
  if (rate != nullptr)
    rate->hold(1);
  return rate != nullptr;
}

void key_gate::settle(const std::string& key, time_point now) {
  if (auto rate = rate_of(key))
    rate->settle(now, 1);
}

void key_gate::park(work_record x) {
  auto& lane = parked_[x.concurrency_key];
  if (lane.empty())
    turns_.push_back(x.concurrency_key);
  lane.push_back(std::move(x));
  ++size_;
}

std::optional<key_gate::time_point> key_gate::next_token(time_point now) {
  std::optional<time_point> result;
  for (auto& key : turns_)
    if (auto rate = rate_of(key)) {
      auto next = rate->next_start(now);
      if (next > now && (!result || next < *result))
        result = next;
    }
  return result;
}

size_t key_gate::remove(uint64_t operation) {
  size_t removed = 0;
  for (auto i = parked_.begin(); i != parked_.end();) {
    auto& lane = i->second;
    auto j = std::remove_if(lane.begin(), lane.end(),
                            [operation](const work_record& x) {
                              return x.id.operation == operation;
                            });
    removed += static_cast<size_t>(lane.end() - j);
    lane.erase(j, lane.end());
    i = lane.empty() ? parked_.erase(i) : std::next(i);
  }
  if (removed > 0) {
    size_ -= removed;
    turns_.erase(std::remove_if(turns_.begin(), turns_.end(),
                                [this](const std::string& key) {
                                  return parked_.count(key) == 0;
                                }),
                 turns_.end());
  }
  return removed;
}

} // namespace pool
