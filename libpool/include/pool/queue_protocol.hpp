#pragma once

// The queue's protocol: every message the queue actor (pool/queue.hpp)
// takes and sends, in one place, beside the pattern's messages
// (pool/protocol.hpp). The pattern's own three are public, in the type-ID
// block (pool/type_ids.hpp), so that any actor may act as a queue or talk
// to one:
//
// - `(add_work, work_record, timespan delay[, std::string unique_key])` ->
//   `queue_counts`; `(add_work, std::vector<work_record>)` -> `queue_counts`
// - `(get_work)` -> `work_record` | `(no_work, timespan wait)`;
//   `(get_work, uint32_t n)` -> `std::vector<work_record>` |
//   `(no_work, timespan wait)`
//
// The rest, below, are the shepherd's private exchanges with its own queue
// and the queue's notes to itself. docs/protocol.md describes the queue's
// answers (their order, the group commit); `queue_link` is the shepherd's
// side of them, `actors/src/queue.cpp` the queue's.

#include <caf/atom.hpp>

namespace pool {

// Private: nothing outside the pool sends or receives them.
namespace queue_msg {

/// `(count_work)`: replies `queue_counts`.
using count_atom = caf::atom_constant<caf::atom("q_count")>;
/// `(q_remove, uint64_t operation)`: drops the operation's entries;
/// replies `queue_counts`.
using remove_atom = caf::atom_constant<caf::atom("q_remove")>;
/// `(q_finish, uint64_t operation, message | error)`: records an outcome
/// (durable stores); replies `queue_counts`.
using finish_atom = caf::atom_constant<caf::atom("q_finish")>;
/// `(q_note, uint64_t operation, attempt_failure)`: adds to the stored
/// history; replies `queue_counts`.
using note_atom = caf::atom_constant<caf::atom("q_note")>;
/// `(q_forget, uint64_t operation)`: forgets an operation that failed for
/// good (an operator retried or discarded it from the dead set: durable
/// stores delete it with its history); replies `queue_counts`.
using forget_atom = caf::atom_constant<caf::atom("q_forget")>;
/// `(q_findkey, std::string key, timespan window)`: replies
/// `(q_keyfound, uint64_t operation)`, 0 for none.
using find_key_atom = caf::atom_constant<caf::atom("q_findkey")>;
using key_found_atom = caf::atom_constant<caf::atom("q_keyfound")>;
/// `(q_record, uint64_t operation)`: replies `operation_record` (id 0 when
/// unknown).
using record_atom = caf::atom_constant<caf::atom("q_record")>;
/// `(q_jobs, job_filter, timespan dead_age)`: a page of the jobs view read
/// from a shared store, every shepherd's operations (`work_store::
/// list_jobs`); replies `job_page`.
using jobs_atom = caf::atom_constant<caf::atom("q_jobs")>;
/// `(q_takeend, job_filter, uint64_t limit, timespan dead_age, bool
/// discard)`: takes failed or cancelled operations out of a shared store
/// for an operator's retry or discard (`work_store::take_ended`); replies
/// `ended_taken` once that is durable.
using take_ended_atom = caf::atom_constant<caf::atom("q_takeend")>;
/// The queue's note to itself: commit the group and release its answers.
using flush_atom = caf::atom_constant<caf::atom("q_flush")>;
/// The queue's note to itself: delete what outlived the store's retention
/// (`work_store::prune`).
using prune_atom = caf::atom_constant<caf::atom("q_prune")>;
/// The queue's note to itself: renew the store's leases
/// (`work_store::renew_leases`).
using renew_atom = caf::atom_constant<caf::atom("q_renew")>;
/// The store's listener to the queue: notifications arrived, or the
/// safety poll is due (`work_store::poll_notifications`).
using wake_atom = caf::atom_constant<caf::atom("q_wake")>;
/// queue -> shepherd, unasked: `(q_lost, std::vector<uint64_t> ops)`, the
/// store lost the leases of these operations' attempts (another store took
/// them back): the attempts are stale.
using lost_atom = caf::atom_constant<caf::atom("q_lost")>;
/// queue -> shepherd, unasked: `(q_news, bool work, std::vector<uint64_t>
/// finished, bool missed)`, what other stores of a shared queue did: work
/// may be due (or the safety poll), these operations finished elsewhere,
/// notifications may have been lost.
using news_atom = caf::atom_constant<caf::atom("q_news")>;

constexpr count_atom count_v{};
constexpr remove_atom remove_v{};
constexpr finish_atom finish_v{};
constexpr note_atom note_v{};
constexpr forget_atom forget_v{};
constexpr find_key_atom find_key_v{};
constexpr key_found_atom key_found_v{};
constexpr record_atom record_v{};
constexpr jobs_atom jobs_v{};
constexpr take_ended_atom take_ended_v{};
constexpr flush_atom flush_v{};
constexpr prune_atom prune_v{};
constexpr renew_atom renew_v{};
constexpr wake_atom wake_v{};
constexpr lost_atom lost_v{};
constexpr news_atom news_v{};

} // namespace queue_msg

} // namespace pool
