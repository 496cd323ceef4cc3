#pragma once

// The one type-ID block of the project: every atom and every message type
// exchanged between callers, shepherd, queue and workers. The protocol is
// documented in docs/protocol.md; keep both in step.

#include <vector>

#include <caf/type_id.hpp>

#include "pool/events.hpp"
#include "pool/job_options.hpp"
#include "pool/metrics.hpp"
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
// (The shepherd's other exchanges with its queue are private, in
// pool/queue_protocol.hpp; its timers in pool/detail/shepherd_effects.hpp.)

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
/// shepherd -> joined worker: `(left_pool, error reason)`, the worker is no
/// longer a member (its attempt timed out, or it stayed silent after being
/// woken); its attempt was withdrawn. It may join again.
CAF_ADD_ATOM(pool, pool, left_pool_atom, "left_pool")

// -- exporters -> shepherd (added last: earlier ids stay as they were) -----

CAF_ADD_TYPE_ID(pool, (pool::histogram_data))
CAF_ADD_TYPE_ID(pool, (pool::pool_metrics))
/// `(pool_metrics)`: replies a `pool_metrics` (the stats snapshot with the
/// histograms' counters and the oldest due age) for exporters.
CAF_ADD_ATOM(pool, pool, pool_metrics_atom, "pool_metr")

// -- flow control (added last: earlier ids stay as they were) ---------------

/// `(pause)`: no attempt starts until `(resume)`; queued work stays,
/// running attempts finish, submits are still accepted. Replies `()`.
CAF_ADD_ATOM(pool, pool, pause_atom, "pause")
/// `(resume)`: attempts start again. Replies `()`.
CAF_ADD_ATOM(pool, pool, resume_atom, "resume")
/// `(wait_idle)`: replies `()` once every submit that reached the pool
/// before it has ended (the pool keeps running; later submits do not hold
/// the answer up).
CAF_ADD_ATOM(pool, pool, wait_idle_atom, "wait_idle")
/// `(enq_once, std::string key, In...)`: as `enq_unique`, but a finished
/// operation with `key` counts however long ago it finished (while the
/// store keeps it: `retention`). Periodic operations use it per tick.
CAF_ADD_ATOM(pool, pool, enqueue_once_atom, "enq_once")
/// A periodic actor's timer (from itself only).
CAF_ADD_ATOM(pool, pool, cron_tick_atom, "cron_tick")

// -- options per submit (added last: earlier ids stay as they were) --------

CAF_ADD_TYPE_ID(pool, (pool::job_options))
/// `(sub_with, job_options, In...)`: as `submit`, with the options of this
/// submit (priority, attempts, timeout, delay, concurrency key); replies
/// `Out`. A unique key is refused here: it needs `enq_with`.
CAF_ADD_ATOM(pool, pool, submit_with_atom, "sub_with")
/// `(enq_with, job_options, In...)`: as `enqueue` with options; with a
/// unique key, as `enq_unique`.
CAF_ADD_ATOM(pool, pool, enqueue_with_atom, "enq_with")

// -- typed outcomes (added last: earlier ids stay as they were) ------------

/// `(enq_typed, In...)` or `(enq_typed, job_options, In...)`: as `enqueue`
/// or `enq_with`, but the outcome comes typed: `(op_result, uint64_t id,
/// Out)` or `(op_failed, uint64_t id, error)`. What `pool::typed_pool`
/// handles send.
CAF_ADD_ATOM(pool, pool, enqueue_typed_atom, "enq_typed")
/// Outcome of an `enq_typed` operation: `(op_result, uint64_t id, Out)`
/// (`caf::unit_t` for a job returning nothing).
CAF_ADD_ATOM(pool, pool, op_result_atom, "op_result")

// -- progress (added last: earlier ids stay as they were) ------------------

/// `(exp_total, uint64_t n)`: the caller expects `n` operations in all
/// (poolrun: its inputs, once read); the stats carry it
/// (`pool_stats::expected_total`) so the page and pooltop show done of
/// total and an ETA. 0 clears it. Replies `()`.
CAF_ADD_ATOM(pool, pool, expect_total_atom, "exp_total")

CAF_END_TYPE_ID_BLOCK(pool)
