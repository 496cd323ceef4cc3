// The gatekeeper's node health (docs/remote.md, "Node health"): the
// `node_health` unit decides, `node_sessions` applies its verdicts to the
// sessions and their stand-ins.
#include "pool/remote_stand_in.hpp"

#include <chrono>

#include <caf/event_based_actor.hpp>

#include "pool/duration_text.hpp"
#include "pool/protocol.hpp"
#include "pool/remote_types.hpp"

namespace pool::detail {

namespace {

/// An operation a node must not run waits this long before it is due
/// again, so that a node that is the only idle one does not take it back
/// at once, again and again, while the others are busy.
constexpr caf::timespan avoid_delay = std::chrono::milliseconds(20);

/// Stand-ins of other nodes asked to take an operation handed back.
constexpr size_t max_nudges = 16;

} // namespace

bool node_sessions::run(caf::event_based_actor* self,
                        const caf::actor& stand_in, uint64_t id, uint32_t slot,
                        work_record& record) {
  auto key = by_id_.find(id);
  session* s = key == by_id_.end() ? nullptr : &sessions_.at(key->second);
  if (s == nullptr || slot >= s->stand_ins.size() ||
      s->stand_ins[slot] != stand_in) {
    // The session ended or was quarantined meanwhile: not the node's work.
    self->send(stand_in, remote_back_atom_v, record.id, caf::timespan::zero());
    return false;
  }
  if (health_.avoid(id, record.id.operation)) {
    self->send(stand_in, remote_back_atom_v, record.id, avoid_delay);
    nudge(self, health_.takers(id, record.id.operation));
    return true;
  }
  health_.sent(id, slot, remote_clock::now());
  self->send(s->node, node_run_atom_v, s->secret, slot, std::move(record));
  return false;
}

void node_sessions::nudge(caf::event_based_actor* self,
                          const std::vector<uint64_t>& nodes) {
  // The shepherd wakes the worker that slept last, likely the one that
  // just handed the operation back: stand-ins of nodes that may run it ask
  // for work instead (a busy or waiting one ignores the nudge).
  size_t sent = 0;
  for (auto id : nodes) {
    auto key = by_id_.find(id);
    if (key == by_id_.end())
      continue;
    for (auto& stand_in : sessions_.at(key->second).stand_ins) {
      if (sent++ == max_nudges)
        return;
      self->send(stand_in, wake_up_atom_v);
    }
  }
}

node_health::verdict node_sessions::outcome(caf::event_based_actor* self,
                                            session& s, uint32_t slot,
                                            const attempt_id& attempt,
                                            bool failed) {
  auto verdict = health_.record(s.id, slot, attempt.operation, failed,
                                remote_clock::now());
  if (verdict.quarantine && book_.quarantine(s.id, remote_clock::now()))
    quarantined(self, s);
  return verdict;
}

void node_sessions::heard(const session& s) {
  health_.heard(s.id, remote_clock::now());
}

std::vector<caf::actor_addr>
node_sessions::drop_silent(caf::event_based_actor* self) {
  std::vector<caf::actor_addr> result;
  for (auto id : health_.silent(remote_clock::now())) {
    auto key = by_id_.find(id);
    if (key == by_id_.end())
      continue;
    auto addr = key->second;
    auto& s = sessions_.at(addr);
    // The node (if it is there at all) learns that its session is over
    // and joins again with fresh workers.
    self->send(s.node, node_bye_atom_v, s.secret);
    end(self, addr,
        caf::make_error(remote_errc::silent, caf::to_string(s.node.node()),
                        duration_text(health_.limits().silent_after)));
    result.push_back(addr);
  }
  return result;
}

} // namespace pool::detail
