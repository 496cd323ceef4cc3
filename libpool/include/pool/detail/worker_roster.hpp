#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>

#include "pool/work_record.hpp"
#include "pool/worker_phase.hpp"

namespace pool {

/// Names a worker in a `worker_roster`: its slot and the slot's generation,
/// so that the name of a worker that left never names its successor.
struct worker_ref {
  uint32_t index = 0;
  /// 0 for "no worker".
  uint32_t generation = 0;

  explicit operator bool() const noexcept {
    return generation != 0;
  }
};

inline bool operator==(worker_ref x, worker_ref y) noexcept {
  return x.index == y.index && x.generation == y.generation;
}

inline bool operator!=(worker_ref x, worker_ref y) noexcept {
  return !(x == y);
}

/// A worker's actor and what identifies its messages (its control block;
/// tests without actors use made-up keys).
struct worker_handle {
  caf::actor actor;
  const void* key = nullptr;
};

/// The shepherd's view of one worker.
struct worker_slot {
  using time_point = caf::actor_clock::time_point;
  /// Where messages to the worker go (empty in tests without actors).
  caf::actor handle;
  /// What identifies the worker's messages (its actor's control block).
  const void* key = nullptr;
  /// The worker's actor id (what it names itself with in a claim ticket).
  uint64_t actor_id = 0;
  worker_phase phase = worker_phase::sleeping;
  /// Joined through `(join_pool, actor)` rather than spawned by the pool.
  bool joined = false;
  /// Surplus after a shrink: stops once its current attempts are reported.
  bool retiring = false;
  /// A `get_work` for this worker is on its way to or from the queue.
  bool asking = false;
  /// Waiting as far as the shepherd knows, but asleep as far as the worker
  /// knows: the shepherd asked for work on its behalf (own workers take
  /// work in any state), so it is not told to sleep if none comes.
  bool dozing = false;
  /// The attempts it holds while `working`: one, or a batch in run order,
  /// then the batch sent ahead, if any.
  std::vector<attempt_id> held;
  /// How many attempts at the end of `held` are the batch sent ahead
  /// (`dispatch_tuning::lookahead`): in its mailbox, not started.
  uint32_t ahead = 0;
  /// `give_work` messages that only end a batch it ran before the one
  /// sent ahead (which it runs now): nothing to do for them.
  uint32_t asks_due = 0;
  /// The batch sent ahead, until it runs: withdrawn on pause.
  std::optional<claim_ticket> ahead_ticket;
  /// When it last went to sleep (autoscaling).
  time_point slept_at;
  /// When the first attempt held started.
  time_point started;
  /// Tokens of the flow gate its batch holds until it reports (see
  /// `flow_gate::hold`).
  uint32_t gated = 0;
  /// Keys whose rate tokens its batch holds until it reports, one entry
  /// per token (see `key_gate::hold`).
  std::vector<std::string> key_tokens;
  /// When the worker entered its current phase.
  time_point since;

private:
  friend class worker_roster;
  uint32_t generation_ = 0;
  /// Links of the phase list this slot is in (slot indexes; `npos` ends).
  uint32_t prev_ = 0;
  uint32_t next_ = 0;
  /// Position in the retiring list, while retiring.
  size_t retiring_pos_ = 0;
};

/// Every worker of one pool with its phase: the sleeper stack (most recently
/// slept first), the counts by phase and their invariant
/// (`sleeping + waiting + busy == size`), joined and retiring workers, and
/// the resize plan. Every operation is O(1) but `resize`, which is linear in
/// the change of size. Plain value: no actor system needed, not thread-safe.
class worker_roster {
public:
  using time_point = caf::actor_clock::time_point;

  static constexpr uint32_t npos = ~uint32_t{0};

  worker_roster();

  // -- membership -------------------------------------------------------------

  /// Adds a worker, sleeping (the most recent sleeper).
  worker_ref add(worker_handle who, bool joined, time_point now);

  /// Removes a worker in any phase.
  void remove(worker_ref ref);

  /// The worker whose messages carry `key`; empty if none.
  worker_ref find(const void* key) const;

  /// The slot of `ref`, or null if that worker left. (Inline: a job's way
  /// through the shepherd asks this about 15 times.)
  worker_slot* get(worker_ref ref) {
    if (!ref || ref.index >= slots_.size())
      return nullptr;
    auto& slot = slots_[ref.index];
    return slot.generation_ == ref.generation && slot.key != nullptr ? &slot
                                                                     : nullptr;
  }

  const worker_slot* get(worker_ref ref) const {
    return const_cast<worker_roster*>(this)->get(ref);
  }

  /// Moves a worker to `phase`; a sleeper becomes the most recent sleeper.
  void set_phase(worker_ref ref, worker_phase phase, time_point now);

  // -- counts -----------------------------------------------------------------

  size_t size() const noexcept {
    return keys_.size();
  }

  size_t sleeping() const noexcept {
    return lists_[0].size;
  }

  size_t waiting() const noexcept {
    return lists_[1].size;
  }

  size_t busy() const noexcept {
    return lists_[2].size;
  }

  size_t joined() const noexcept {
    return joined_;
  }

  size_t retiring() const noexcept {
    return retiring_.size();
  }

  /// Local workers that stay: neither joined nor retiring.
  size_t staying_local() const noexcept {
    return size() - joined_ - retiring_.size();
  }

  /// Highest `busy()` so far.
  size_t busy_high() const noexcept {
    return busy_high_;
  }

  /// Whether the phase counts add up (tests and assertions).
  bool consistent() const noexcept;

  // -- walking the phases -----------------------------------------------------

  /// The most recently slept worker; empty if none sleeps.
  worker_ref top_sleeper() const;

  /// Calls `f(worker_ref, worker_slot&)` for each worker in `phase`, for
  /// sleepers the longest asleep first, until `f` returns false.
  template <class F>
  void for_each(worker_phase phase, F f) {
    auto i = lists_[static_cast<size_t>(phase)].head;
    while (i != npos) {
      auto next = slots_[i].next_;
      if (!f(ref_of(i), slots_[i]))
        return;
      i = next;
    }
  }

  // -- resizing ---------------------------------------------------------------

  /// What to do to reach the configured size (see `resize`).
  struct resize_step {
    /// Local workers to spawn.
    size_t spawn = 0;
    /// Idle local workers to stop now (removed from the roster already).
    std::vector<worker_handle> stop;
  };

  /// Sets the number of local workers the pool should have. Growing first
  /// takes back retiring workers; shrinking stops idle workers (sleeping
  /// ones first, the longest asleep first, then waiting ones for which
  /// `may_stop` says yes) and marks busy ones as retiring. Does at most
  /// `budget` spawns and stops; call `next_resize_step` until it reports
  /// nothing to do, so that huge changes are spread over many messages.
  template <class MayStop>
  resize_step resize(size_t n, size_t budget, MayStop may_stop) {
    configured_ = n;
    return next_resize_step(budget, may_stop);
  }

  template <class MayStop>
  resize_step next_resize_step(size_t budget, MayStop may_stop);

  /// Whether local workers must still be spawned or stopped.
  bool resize_pending() const noexcept {
    return staying_local() != configured_;
  }

  /// Local workers the pool should have.
  size_t configured() const noexcept {
    return configured_;
  }

  void set_configured(size_t n) noexcept {
    configured_ = n;
  }

  /// Marks a busy local worker as surplus, or takes that back.
  void set_retiring(worker_ref ref, bool retiring);

private:
  struct phase_list {
    uint32_t head = npos;
    uint32_t tail = npos;
    size_t size = 0;
  };

  worker_ref ref_of(uint32_t index) const noexcept {
    return worker_ref{index, slots_[index].generation_};
  }

  phase_list& list_of(worker_phase x) {
    return lists_[static_cast<size_t>(x)];
  }

  void link(uint32_t index, worker_phase phase);

  void unlink(uint32_t index);

  std::vector<worker_slot> slots_;
  std::vector<uint32_t> free_;
  std::unordered_map<const void*, worker_ref> keys_;
  phase_list lists_[3];
  std::vector<uint32_t> retiring_;
  size_t joined_ = 0;
  size_t configured_ = 0;
  size_t busy_high_ = 0;
  uint32_t next_generation_ = 1;
};

template <class MayStop>
worker_roster::resize_step worker_roster::next_resize_step(size_t budget,
                                                           MayStop may_stop) {
  resize_step result;
  // Growing: first take back workers that were about to retire.
  while (staying_local() < configured_ && !retiring_.empty()) {
    set_retiring(ref_of(retiring_.back()), false);
  }
  if (staying_local() < configured_) {
    result.spawn = std::min(configured_ - staying_local(), budget);
    return result; // (The caller adds them.)
  }
  auto stop = [&](worker_ref ref, worker_slot& slot) {
    result.stop.push_back(worker_handle{slot.handle, slot.key});
    remove(ref);
    --budget;
  };
  auto surplus = [&] { return staying_local() > configured_ && budget > 0; };
  // Shrinking: sleepers first, the longest asleep first; then idle waiters.
  for (auto phase : {worker_phase::sleeping, worker_phase::waiting}) {
    for_each(phase, [&](worker_ref ref, worker_slot& slot) {
      if (!surplus())
        return false;
      if (!slot.joined && !slot.retiring &&
          (phase == worker_phase::sleeping || may_stop(ref, slot)))
        stop(ref, slot);
      return true;
    });
  }
  // Then busy ones (and waiters that must not stop yet) after their work.
  for (auto phase : {worker_phase::working, worker_phase::waiting}) {
    for_each(phase, [&](worker_ref ref, worker_slot& slot) {
      if (!surplus())
        return false;
      if (!slot.joined && !slot.retiring) {
        set_retiring(ref, true);
        --budget;
      }
      return true;
    });
  }
  return result;
}

// -- inline: every job changes phases (an idle pool, four times) --------------

inline void worker_roster::set_phase(worker_ref ref, worker_phase phase,
                                     time_point now) {
  auto slot = get(ref);
  if (slot == nullptr || slot->phase == phase)
    return;
  unlink(ref.index);
  link(ref.index, phase);
  slot->phase = phase;
  slot->since = now;
  if (phase == worker_phase::sleeping)
    slot->slept_at = now;
  else if (phase == worker_phase::working)
    busy_high_ = std::max(busy_high_, busy());
}

inline worker_ref worker_roster::top_sleeper() const {
  auto tail = lists_[0].tail;
  return tail == npos ? worker_ref{} : ref_of(tail);
}

inline void worker_roster::link(uint32_t index, worker_phase phase) {
  // Appended at the tail: for sleepers, the most recent one.
  auto& list = list_of(phase);
  auto& slot = slots_[index];
  slot.prev_ = list.tail;
  slot.next_ = npos;
  if (list.tail != npos)
    slots_[list.tail].next_ = index;
  else
    list.head = index;
  list.tail = index;
  ++list.size;
}

inline void worker_roster::unlink(uint32_t index) {
  auto& slot = slots_[index];
  auto& list = list_of(slot.phase);
  if (slot.prev_ != npos)
    slots_[slot.prev_].next_ = slot.next_;
  else
    list.head = slot.next_;
  if (slot.next_ != npos)
    slots_[slot.next_].prev_ = slot.prev_;
  else
    list.tail = slot.prev_;
  --list.size;
}

} // namespace pool
