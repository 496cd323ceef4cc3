#pragma once

// Per-node health of remote worker nodes, as plain C++ (no actor system):
// how often each node's attempts fail compared with the pool's other
// nodes, which failures are given back instead of counted, which
// operations must not run on a node again, and which nodes went silent.
// Time comes in as an argument, so every decision is tested with an
// injected clock. The gatekeeper owns one; a pool without remote nodes has
// none and pays nothing. docs/remote.md, "Node health", states the rule.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include <caf/timespan.hpp>

namespace pool {

/// The bounds of the health rule. Plain value; `validate` names a bad field.
struct node_health_limits {
  /// Outcomes remembered per node (a sliding window of its last attempts).
  uint32_t window = 64;
  /// A node is quarantined only when its window and the other nodes'
  /// windows together hold at least this many outcomes each.
  uint32_t min_sample = 16;
  /// A node is an outlier when its failure share exceeds the other nodes'
  /// pooled share by at least this much (0 < margin <= 1).
  double margin = 0.5;
  /// A node with an attempt out that sent nothing (no result, no
  /// heartbeat) for this long is dropped; 0 turns the check off.
  caf::timespan silent_after = std::chrono::seconds(10);
  /// Operations remembered with the nodes that failed them (oldest first
  /// forgotten beyond this).
  size_t remembered_operations = 65536;

  /// The name of the first bad field, or null.
  const char* invalid_field() const noexcept;
};

/// Health of the nodes of one gatekeeper, keyed by session id. Not
/// thread-safe: owned by one actor.
class node_health {
public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;

  explicit node_health(node_health_limits limits = {}) : limits_(limits) {
    // nop
  }

  /// What to do with an attempt that ended on a node.
  struct verdict {
    /// The failure is the node's, not the operation's: it goes back to the
    /// queue without using up an attempt.
    bool give_back = false;
    /// The node is an outlier: quarantine it now (its window starts over).
    bool quarantine = false;
  };

  /// A node joined (or returned from quarantine: its record starts over).
  void add(uint64_t node, time_point now);

  /// A node left; forgets its record (operations keep what they remember).
  void remove(uint64_t node);

  /// The node gets no work until `release` (its attempts out are
  /// forgotten: they went back with its workers).
  void quarantine(uint64_t node);

  /// The node gets work again, with an empty window.
  void release(uint64_t node, time_point now);

  bool contains(uint64_t node) const {
    return nodes_.count(node) > 0;
  }

  bool quarantined(uint64_t node) const;

  /// Records the outcome of an attempt of `operation` on `node`'s worker
  /// `slot` (it is no longer out; the answer is also a sign of life). A failure
  /// is given back when, with it, the node's failure share exceeds the others'
  /// by at least `margin` (the others' share counts as 0 until they hold
  /// `min_sample` outcomes) and another node can take the work; the node
  /// is quarantined when that holds and both samples are large enough.
  verdict record(uint64_t node, uint32_t slot, uint64_t operation, bool failed,
                 time_point now);

  /// Whether `operation` must not run on `node`: the node failed it before
  /// and another node that has not failed it can take work.
  bool avoid(uint64_t node, uint64_t operation) const;

  /// The nodes other than `node` that can take `operation`: not
  /// quarantined and never failed it.
  std::vector<uint64_t> takers(uint64_t node, uint64_t operation) const;

  /// Any message from `node` (a heartbeat).
  void heard(uint64_t node, time_point now);

  /// An attempt went out to `node` on its worker `slot`.
  void sent(uint64_t node, uint32_t slot, time_point now);

  /// The attempt on `slot` ended without an answer (timed out there).
  void abandoned(uint64_t node, uint32_t slot);

  /// Nodes with an attempt out for `silent_after` that sent nothing for as
  /// long: to be dropped (each once: they are removed).
  std::vector<uint64_t> silent(time_point now);

  /// The node's failure share over its window (0 when empty).
  double share(uint64_t node) const;

  /// The other nodes' pooled failure share and outcome count (nodes in
  /// quarantine left out).
  std::pair<double, size_t> others(uint64_t node) const;

  const node_health_limits& limits() const noexcept {
    return limits_;
  }

private:
  struct record_of {
    std::deque<bool> window; // true: failed
    size_t failures = 0;
    bool quarantined = false;
    time_point heard{};
    /// Attempts out by slot, with when each went out.
    std::map<uint32_t, time_point> out;
  };

  void remember(uint64_t operation, uint64_t node);

  /// Whether a node other than `node` that has not failed `operation`
  /// (none: any) can take work.
  bool other_available(uint64_t node, std::optional<uint64_t> operation) const;

  node_health_limits limits_;
  std::map<uint64_t, record_of> nodes_;
  /// Operation id → the nodes it failed on; `order` forgets the oldest.
  std::unordered_map<uint64_t, std::vector<uint64_t>> failed_on_;
  std::deque<uint64_t> order_;
};

} // namespace pool
