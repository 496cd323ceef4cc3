#pragma once

// The one type-ID block of the project: every atom and every message type
// exchanged between callers, shepherd, queue and workers. The protocol is
// documented in docs/protocol.md; keep both in step.

#include <vector>

#include <caf/type_id.hpp>

#include "pool/events.hpp"
#include "pool/operation_record.hpp"
#include "pool/stats.hpp"
#include "pool/work_record.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(pool, caf::first_custom_type_id)

// -- message types ----------------------------------------------------------

CAF_ADD_TYPE_ID(pool, (pool::attempt_id))
CAF_ADD_TYPE_ID(pool, (pool::work_record))
CAF_ADD_TYPE_ID(pool, (std::vector<pool::work_record>))
CAF_ADD_TYPE_ID(pool, (pool::attempt_outcome))
CAF_ADD_TYPE_ID(pool, (std::vector<pool::attempt_outcome>))
CAF_ADD_TYPE_ID(pool, (pool::queue_counts))
CAF_ADD_TYPE_ID(pool, (pool::pool_stats))
CAF_ADD_TYPE_ID(pool, (pool::latency_summary))
CAF_ADD_TYPE_ID(pool, (pool::attempt_failure))
CAF_ADD_TYPE_ID(pool, (std::vector<pool::attempt_failure>))
CAF_ADD_TYPE_ID(pool, (pool::pool_event))
CAF_ADD_TYPE_ID(pool, (pool::operation_record))

// -- callers -> shepherd ----------------------------------------------------

/// `(submit, In...)`: run the pool's function on `In...`; replies `Out`.
CAF_ADD_ATOM(pool, pool, submit_atom, "submit")
/// `(sub_after, timespan delay, In...)`: as submit, not started before
/// `delay` has passed.
CAF_ADD_ATOM(pool, pool, submit_after_atom, "sub_after")
/// `(pool_stats)`: replies a `pool_stats` snapshot.
CAF_ADD_ATOM(pool, pool, pool_stats_atom, "pool_stats")
/// `(join_pool, actor)`: adds an actor speaking the worker protocol.
CAF_ADD_ATOM(pool, pool, join_pool_atom, "join_pool")
/// `(enqueue, In...)`: replies the operation id at once; the outcome
/// follows as `(op_done, id, message)` or `(op_failed, id, error)`.
CAF_ADD_ATOM(pool, pool, enqueue_atom, "enqueue")
/// Outcome of an enqueued operation: `(op_done, uint64_t id, message)`.
CAF_ADD_ATOM(pool, pool, op_done_atom, "op_done")
/// Outcome of an enqueued operation: `(op_failed, uint64_t id, error)`.
CAF_ADD_ATOM(pool, pool, op_failed_atom, "op_failed")
/// `(enq_unique, std::string key, In...)`: as enqueue, but when an
/// operation with `key` is unfinished (or, with a durable store, finished
/// within `unique_window`), replies that operation's id and adds nothing.
CAF_ADD_ATOM(pool, pool, enqueue_unique_atom, "enq_unique")
/// `(op_status, uint64_t id)`: replies the `operation_record` (a durable
/// store also knows finished operations, across restarts).
CAF_ADD_ATOM(pool, pool, op_status_atom, "op_status")
/// `(cancel_op, uint64_t id)`: cancels a pending operation.
CAF_ADD_ATOM(pool, pool, cancel_op_atom, "cancel_op")
/// `(resize, uint64_t workers)`: grows or shrinks the local workers;
/// replies once the pool has that size.
CAF_ADD_ATOM(pool, pool, resize_atom, "resize")
/// `(drain)` or `(drain, timespan deadline)`: finish all, then stop.
CAF_ADD_ATOM(pool, pool, drain_atom, "drain")

/// `(pool_sub, actor)` or `(pool_sub, actor, uint32_t mask)`: sends
/// `pool_event`s of the kinds in `mask` (default: all) to the actor until it
/// unsubscribes or terminates.
CAF_ADD_ATOM(pool, pool, subscribe_atom, "pool_sub")
/// `(pool_unsub, actor)`: stops sending events to the actor.
CAF_ADD_ATOM(pool, pool, unsubscribe_atom, "pool_unsub")

// -- shepherd <-> queue -----------------------------------------------------

/// `(add_work, work_record, timespan delay)` or
/// `(add_work, work_record, timespan delay, std::string unique_key)`:
/// replies `queue_counts`. `(add_work, std::vector<work_record>)`: adds
/// several entries, due now, in order; replies one `queue_counts`.
CAF_ADD_ATOM(pool, pool, add_work_atom, "add_work")
/// `(get_work)`: replies `work_record` or `(no_work, timespan wait)`.
/// `(get_work, uint32_t n)`: replies up to `n` due entries as
/// `std::vector<work_record>` (at least one), or `(no_work, timespan wait)`.
CAF_ADD_ATOM(pool, pool, get_work_atom, "get_work")
/// Reply to `get_work` when nothing is due: `(no_work, timespan wait)`.
CAF_ADD_ATOM(pool, pool, no_work_atom, "no_work")
/// `(fin_work, uint64_t operation, message result)` or
/// `(fin_work, uint64_t operation, error)`: records the outcome in the store;
/// replies `queue_counts`.
CAF_ADD_ATOM(pool, pool, finish_work_atom, "fin_work")
/// `(note_fail, uint64_t operation, attempt_failure)`: adds to the stored
/// attempt history; replies `queue_counts`.
CAF_ADD_ATOM(pool, pool, note_failure_atom, "note_fail")
/// `(find_key, std::string key, timespan window)`: replies
/// `(key_found, uint64_t operation)`, 0 when there is none.
CAF_ADD_ATOM(pool, pool, find_key_atom, "find_key")
/// Reply to `find_key`.
CAF_ADD_ATOM(pool, pool, key_found_atom, "key_found")
/// `(get_record, uint64_t operation)`: replies `operation_record` or an
/// `unknown_operation` error.
CAF_ADD_ATOM(pool, pool, get_record_atom, "get_record")
/// Queue internal: commit the group of changes and release their answers.
CAF_ADD_ATOM(pool, pool, flush_atom, "q_flush")
/// `(count_work)`: replies `queue_counts`.
CAF_ADD_ATOM(pool, pool, count_work_atom, "count_work")
/// `(rm_work, uint64_t operation)`: drops the operation's entries;
/// replies `queue_counts`.
CAF_ADD_ATOM(pool, pool, remove_work_atom, "rm_work")

// -- shepherd <-> workers ---------------------------------------------------

/// shepherd -> sleeping worker: start asking for work.
CAF_ADD_ATOM(pool, pool, wake_up_atom, "wake_up")
/// worker -> shepherd: `(give_work)`, I am free.
CAF_ADD_ATOM(pool, pool, give_me_work_atom, "give_work")
/// shepherd -> worker: `(work_to_do, work_record)`; to the pool's own
/// workers also `(work_to_do, std::vector<work_record>, bool each)`, a
/// batch run in order: with `each`, every attempt is reported by its own
/// `status_rep` as it finishes; else all in one.
CAF_ADD_ATOM(pool, pool, work_to_do_atom, "work_to_do")
/// shepherd -> worker: nothing is due, sleep until woken.
CAF_ADD_ATOM(pool, pool, go_to_sleep_atom, "go_sleep")
/// worker -> shepherd: `(status_rep, attempt_id, message result)` or
/// `(status_rep, attempt_id, error)`; for a batch also
/// `(status_rep, std::vector<attempt_outcome>)`: the outcomes of the first
/// attempts the worker still holds, in order; the ones it holds beyond
/// them were not started.
CAF_ADD_ATOM(pool, pool, status_reply_atom, "status_rep")

// -- shepherd internal ------------------------------------------------------

/// Timer: the earliest delayed entry is due.
CAF_ADD_ATOM(pool, pool, due_timer_atom, "due_timer")
/// Timer: `(att_timer, attempt_id, actor_addr worker)` the processing time
/// of the attempt the worker runs is up.
CAF_ADD_ATOM(pool, pool, attempt_timeout_atom, "att_timer")
/// Timer: a drain's deadline passed.
CAF_ADD_ATOM(pool, pool, drain_timer_atom, "drain_tmr")
/// Timer: the backlog condition may have persisted long enough.
CAF_ADD_ATOM(pool, pool, backlog_timer_atom, "bklg_tmr")
/// Timer: a sleeping worker may have been idle long enough to stop.
CAF_ADD_ATOM(pool, pool, idle_timer_atom, "idle_tmr")

CAF_END_TYPE_ID_BLOCK(pool)
