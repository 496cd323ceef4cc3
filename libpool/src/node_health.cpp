#include "pool/node_health.hpp"

#include <algorithm>

namespace pool {

const char* node_health_limits::invalid_field() const noexcept {
  if (window == 0)
    return "window";
  if (min_sample == 0 || min_sample > window)
    return "min_sample";
  if (!(margin > 0.0 && margin <= 1.0))
    return "margin";
  if (silent_after < caf::timespan::zero())
    return "silent_after";
  if (remembered_operations == 0)
    return "remembered_operations";
  return nullptr;
}

void node_health::add(uint64_t node, time_point now) {
  auto& x = nodes_[node];
  x = record_of{};
  x.heard = now;
}

void node_health::remove(uint64_t node) {
  nodes_.erase(node);
}

void node_health::quarantine(uint64_t node) {
  auto i = nodes_.find(node);
  if (i == nodes_.end())
    return;
  i->second.quarantined = true;
  i->second.out.clear();
}

void node_health::release(uint64_t node, time_point now) {
  if (nodes_.count(node) > 0)
    add(node, now);
}

bool node_health::quarantined(uint64_t node) const {
  auto i = nodes_.find(node);
  return i != nodes_.end() && i->second.quarantined;
}

double node_health::share(uint64_t node) const {
  auto i = nodes_.find(node);
  if (i == nodes_.end() || i->second.window.empty())
    return 0.0;
  return static_cast<double>(i->second.failures) /
         static_cast<double>(i->second.window.size());
}

std::pair<double, size_t> node_health::others(uint64_t node) const {
  size_t failures = 0;
  size_t total = 0;
  for (auto& [id, x] : nodes_) {
    if (id == node || x.quarantined) // (an outlier is no measure)
      continue;
    failures += x.failures;
    total += x.window.size();
  }
  if (total == 0)
    return {0.0, 0};
  return {static_cast<double>(failures) / static_cast<double>(total), total};
}

bool node_health::other_available(uint64_t node,
                                  std::optional<uint64_t> operation) const {
  const std::vector<uint64_t>* failed = nullptr;
  if (operation)
    if (auto i = failed_on_.find(*operation); i != failed_on_.end())
      failed = &i->second;
  for (auto& [id, x] : nodes_) {
    if (id == node || x.quarantined)
      continue;
    if (failed == nullptr ||
        std::find(failed->begin(), failed->end(), id) == failed->end())
      return true;
  }
  return false;
}

std::vector<uint64_t> node_health::takers(uint64_t node,
                                          uint64_t operation) const {
  std::vector<uint64_t> result;
  auto i = failed_on_.find(operation);
  for (auto& [id, x] : nodes_)
    if (id != node && !x.quarantined &&
        (i == failed_on_.end() ||
         std::find(i->second.begin(), i->second.end(), id) == i->second.end()))
      result.push_back(id);
  return result;
}

void node_health::remember(uint64_t operation, uint64_t node) {
  auto [i, added] = failed_on_.try_emplace(operation);
  if (added) {
    order_.push_back(operation);
    if (order_.size() > limits_.remembered_operations) {
      failed_on_.erase(order_.front());
      order_.pop_front();
    }
  }
  auto& nodes = i->second;
  if (std::find(nodes.begin(), nodes.end(), node) == nodes.end())
    nodes.push_back(node);
}

node_health::verdict node_health::record(uint64_t node, uint32_t slot,
                                         uint64_t operation, bool failed,
                                         time_point now) {
  auto i = nodes_.find(node);
  if (i == nodes_.end())
    return {};
  auto& x = i->second;
  x.heard = now;
  x.out.erase(slot);
  if (x.quarantined)
    return {}; // Late answers of a quarantined node judge nothing.
  x.window.push_back(failed);
  x.failures += failed ? 1 : 0;
  if (x.window.size() > limits_.window) {
    x.failures -= x.window.front() ? 1 : 0;
    x.window.pop_front();
  }
  if (!failed)
    return {};
  remember(operation, node);
  // Judged only against other nodes: with none that can take the work, a
  // failure counts as it would on any worker.
  if (!other_available(node, std::nullopt))
    return {};
  auto [others_share, others_total] = others(node);
  auto known = others_total >= limits_.min_sample;
  auto baseline = known ? others_share : 0.0;
  verdict result;
  // (A tiny epsilon keeps a share exactly at the margin an outlier.)
  result.give_back = share(node) - baseline >= limits_.margin - 1e-9;
  result.quarantine =
      result.give_back && known && x.window.size() >= limits_.min_sample;
  if (result.quarantine)
    quarantine(node);
  return result;
}

bool node_health::avoid(uint64_t node, uint64_t operation) const {
  auto i = failed_on_.find(operation);
  if (i == failed_on_.end() ||
      std::find(i->second.begin(), i->second.end(), node) == i->second.end())
    return false;
  return other_available(node, operation);
}

void node_health::heard(uint64_t node, time_point now) {
  if (auto i = nodes_.find(node); i != nodes_.end())
    i->second.heard = now;
}

void node_health::sent(uint64_t node, uint32_t slot, time_point now) {
  if (auto i = nodes_.find(node); i != nodes_.end())
    i->second.out[slot] = now;
}

void node_health::abandoned(uint64_t node, uint32_t slot) {
  if (auto i = nodes_.find(node); i != nodes_.end())
    i->second.out.erase(slot);
}

std::vector<uint64_t> node_health::silent(time_point now) {
  std::vector<uint64_t> result;
  if (limits_.silent_after <= caf::timespan::zero())
    return result;
  for (auto& [id, x] : nodes_) {
    if (x.quarantined || x.out.empty() || now - x.heard < limits_.silent_after)
      continue;
    auto oldest =
        std::min_element(x.out.begin(), x.out.end(),
                         [](auto& a, auto& b) { return a.second < b.second; });
    if (now - oldest->second >= limits_.silent_after)
      result.push_back(id);
  }
  for (auto id : result)
    nodes_.erase(id);
  return result;
}

} // namespace pool
