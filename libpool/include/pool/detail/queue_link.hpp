#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/atom.hpp>
#include <caf/message.hpp>
#include <caf/response_promise.hpp>

#include "pool/detail/operation_table.hpp"
#include "pool/queue_protocol.hpp"
#include "pool/detail/shepherd_effects.hpp"
#include "pool/work_record.hpp"
#include "pool/detail/worker_roster.hpp"

namespace pool {

/// The exchanges with the queue that await an answer.
namespace exchange {

/// One entry; answered with counts (or an error: the store refused it).
struct add {
  attempt_id id;
  caf::actor_clock::time_point due;
  /// Unique key, stored with a durable entry; empty for none.
  std::string key;
  /// A tracked submit to a durable store: its caller waits for the id until
  /// the entry is on disk.
  std::optional<caf::response_promise> ack;
  /// Sent due now (counted in the adds that hold grouped entries back).
  bool due_now = false;
  /// Submitted with options a durable store keeps (never grouped).
  bool options = false;
};

/// Several entries due now, in order; one counts answer.
struct add_many {
  std::vector<attempt_id> ids;
};

/// Up to `wanted` due entries for `worker`, or (empty worker) taken out
/// ahead; answered with entries or `no_work`.
struct get {
  worker_ref worker;
  uint32_t wanted = 1;
  /// Tokens of the flow gate waiting for the answer (see `flow_gate`).
  uint32_t reserved = 0;
};

/// The queue's counts, to wake workers.
struct count {};

struct remove {
  uint64_t operation = 0;
};

/// An outcome or a failed attempt recorded in a durable store.
struct record {
  caf::message sent;
  /// An outcome (`q_finish`), not a failed attempt.
  bool outcome = false;
};

struct find_key {
  std::string key;
  caf::message sent;
};

struct lookup {
  uint64_t operation = 0;
  caf::response_promise promise;
  caf::message sent;
  /// No caller asked: the operation finished elsewhere (a shared store),
  /// and its outcome settles it here.
  bool settle = false;
};

} // namespace exchange

/// The kinds of answer the queue gives; each kind comes in request order.
enum class answer_kind { counts, work, key, record };

/// One pending exchange and the order in which it was first sent.
struct pending_exchange {
  using kind = std::variant<exchange::add, exchange::add_many, exchange::get,
                            exchange::count, exchange::remove, exchange::record,
                            exchange::find_key, exchange::lookup>;
  kind what;
  uint64_t seq = 0;
};

/// The shepherd's side of its conversation with the queue actor: what was
/// asked and awaits an answer (one FIFO per kind of answer, matched in
/// order, so that no per-request handler is needed: CAF 0.17 keeps those in
/// a flat list), the resend order after a queue restart, the grouping of
/// adds (entries due now wait while an add is on its way, then go in one
/// message), and the queue's last reported counts. Plain value.
class queue_link {
public:
  using time_point = caf::actor_clock::time_point;

  /// Sends through `fx`; `table` provides the payloads.
  queue_link(operation_table& table, shepherd_effects& fx);

  /// Whether entries due now are grouped while an add is on its way.
  void group_adds(bool on) noexcept {
    group_adds_ = on;
  }

  /// Adds the current attempt of an operation, due at `due`: at once, or
  /// kept for the next group (due now, no key, no acknowledgement, an add on
  /// its way). Nothing is sent for an operation that ended or moved on; a
  /// caller waiting for its id then gets it at once.
  /// Returns true if it was sent now (not kept for a group).
  bool add(exchange::add x, time_point now);

  /// `add` of a plain entry due now (no key, no acknowledgement, no
  /// options): kept for the next group when an add is on its way.
  bool add_due_now(attempt_id id, time_point now) {
    if (adds_pending_ > 0 && group_adds_) {
      grouped_.push_back(id);
      return false;
    }
    return add(exchange::add{id, now, {}, std::nullopt, false}, now);
  }

  /// Sends an exchange of any other kind.
  void send(pending_exchange::kind x);

  /// Takes the oldest exchange awaiting an answer of `kind`; none if there
  /// is none. Taking an add lets the grouped entries go once no add is on
  /// its way.
  std::optional<pending_exchange::kind> take(answer_kind kind);

  /// Done with an exchange `take` gave: keeps the buffer of a group's ids
  /// for the next group (a group is one allocation, not a growing one).
  void recycle(pending_exchange::kind& x) {
    if (auto many = std::get_if<exchange::add_many>(&x);
        many != nullptr && many->ids.capacity() > 0 && spares_.size() < 8) {
      many->ids.clear();
      spares_.emplace_back().swap(many->ids);
    }
  }

  /// The queue was respawned: sends everything still pending again, in the
  /// order it was first sent (answers arrive before the down message, so
  /// none of it reached the old queue's store).
  void resend_all();

  // -- what is known of the queue ---------------------------------------------

  /// Entries asked for by pending `get` exchanges.
  size_t getting() const noexcept {
    return getting_;
  }

  /// Entries due now on their way into the queue (sent, not yet counted
  /// by it) or kept for the next group.
  size_t due_in_flight() const noexcept {
    return due_in_flight_ + grouped_.size();
  }

  /// Entries kept for the next group.
  size_t grouped() const noexcept {
    return grouped_.size();
  }

  /// Whether the queue may hold or receive a due entry the shepherd does
  /// not know of yet: an entry kept for a group, or an add or count on its
  /// way (its answer may wake workers).
  bool adding() const;

  /// Whether an outcome or a failure is still being recorded.
  bool recording() const;

  /// Whether nothing awaits an answer.
  bool idle() const;

  /// The callers waiting for answers from the queue (acknowledgements of
  /// durable adds, lookups), taken out: the shepherd is terminating.
  std::vector<caf::response_promise> take_promises();

private:
  static answer_kind answer_of(const pending_exchange::kind& x);

  void transmit(pending_exchange x);

  /// Sends the grouped entries in one `add_work`.
  void flush_group();

  operation_table& table_;
  shepherd_effects& fx_;
  std::array<std::deque<pending_exchange>, 4> fifos_;
  uint64_t next_seq_ = 1;
  size_t getting_ = 0;
  size_t due_in_flight_ = 0;
  /// Adds of entries due now still pending; grouped entries wait for them.
  size_t adds_pending_ = 0;
  std::vector<attempt_id> grouped_;
  /// Empty buffers with room, for the next groups (see `recycle`): one
  /// for each group on its way to the queue, up to 8.
  std::vector<std::vector<attempt_id>> spares_;
  bool group_adds_ = true;
};

} // namespace pool
