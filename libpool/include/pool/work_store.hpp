#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_clock.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/message.hpp>
#include <caf/timespan.hpp>

#include "pool/job_options.hpp"
#include "pool/jobs.hpp"
#include "pool/operation_record.hpp"
#include "pool/work_record.hpp"

namespace pool {

class key_flow_options;

/// What a shared store learned from other stores since the last
/// `work_store::poll_notifications()`.
struct store_notifications {
  /// Entries were added or taken back: counts and due times may have
  /// changed (recount, offer work to sleeping workers).
  bool work = false;
  /// Operations that other stores finished (done, failed or cancelled):
  /// their outcome is there for `lookup`.
  std::vector<uint64_t> finished;
  /// Notifications may have been lost (the listener reconnected, or too
  /// many piled up): look up every operation still awaited.
  bool missed = false;
};

/// An operation that failed for good as a durable store keeps it
/// (`work_store::failed_operations`): for the dead set of a restarted pool.
struct failed_operation {
  operation_record record;
  /// How long ago it failed.
  caf::timespan ago{0};
};

/// What `work_store::take_ended` took out of a shared store.
struct ended_taken {
  /// In id order: failed (`operation_failed`) or cancelled, with payload,
  /// key, options, attempt history and the error its caller got.
  std::vector<failed_operation> ops;
  /// Operations that matched but were left (the limit was reached).
  uint64_t left = 0;
};

/// The storage behind a queue actor. A store lives outside the queue actor
/// (shared through `std::shared_ptr`) so that a crashed queue actor can be
/// respawned over the same store without losing accepted work.
///
/// Ordering contract: entries become available at their due time and are
/// handed out in order of (due time, insertion order); an entry is never
/// handed out before it is due.
///
/// Thread safety: a store is used by one queue actor at a time; it is not
/// synchronized. Implementations never block for long (the in-memory store
/// never blocks at all).
///
/// Durable stores (`durable() == true`, e.g. `sqlite_store`) also keep each
/// operation's outcome, attempt history and unique key, and make changes
/// durable in groups: `push`, `pop_due`, `remove`, `set_key`,
/// `note_failure` and `finish` write into one open transaction that
/// `commit()` ends. Nothing is durable before `commit()` returned `none`.
/// The durable-store hooks default to what the in-memory store needs:
/// nothing happens, nothing is found.
class work_store {
public:
  using time_point = caf::actor_clock::time_point;

  virtual ~work_store();

  /// Adds `x`, due at `due`. `now` is the queue's current time. Returns an
  /// error when the entry could not be stored; then nothing was added.
  virtual caf::error push(work_record x, time_point due, time_point now) = 0;

  /// Adds `records`, all due at `now`, in order (`push` for each). Stops at
  /// the first that cannot be stored and returns its error; the ones
  /// before it stay added. (The memory store adds them in one go.)
  virtual caf::error push_all(std::vector<work_record>& records,
                              time_point now);

  /// Removes and returns the first entry that is due at `now`, if any.
  virtual std::optional<work_record> pop_due(time_point now) = 0;

  /// Removes up to `n` entries due at `now`, in the order `pop_due` gives
  /// them, and appends them to `out`; returns how many. (By default
  /// `pop_due` in a loop; the memory store hands them out in one go.)
  virtual size_t pop_due_into(time_point now, size_t n,
                              std::vector<work_record>& out);

  /// Returns the due time of the earliest entry not yet due at `now`.
  virtual std::optional<time_point> next_due(time_point now) = 0;

  /// `available`, `delayed` and `next_due` at `now` together (what the
  /// queue reports after each change).
  struct counts_at {
    size_t available = 0;
    size_t delayed = 0;
    std::optional<time_point> next_due;
  };

  /// The three counts in one call (by default, the three calls).
  virtual counts_at counts(time_point now);

  /// Removes every entry of `operation`; returns how many there were.
  virtual size_t remove(uint64_t operation) = 0;

  /// Number of entries due at `now`.
  virtual size_t available(time_point now) = 0;

  /// Number of entries not yet due at `now`.
  virtual size_t delayed(time_point now) = 0;

  /// Lets waiting entries gain one priority level per `step` they have
  /// been due (`key_flow_options::priority_aging`); none for strict
  /// priorities. Called before the store is used. Default: ignored (a
  /// store that cannot age says so in its documentation).
  virtual void set_priority_aging(std::optional<caf::timespan> /* step */) {
    // nop
  }

  /// The concurrency limits and start rates per key (`key_flow_options`)
  /// for the store to keep itself: a shared store then keeps them across
  /// every process on its queue. Called before the store is used, only
  /// when a key has a limit of either kind. Default: ignored (each pool's
  /// own gate keeps them for its process).
  virtual void set_key_limits(const key_flow_options& /* limits */) {
    // nop
  }

  // -- durable stores ---------------------------------------------------------

  /// Returns whether accepted work survives the process.
  virtual bool durable() const noexcept {
    return false;
  }

  /// Returns whether other stores (other shepherds, other processes) share
  /// this store's queue (`pg_store`). Then `pop_due` may hand out
  /// operations that another shepherd accepted (adopt them; their history
  /// is in `lookup`), outcomes of this shepherd's operations may arrive
  /// through `poll_notifications`, counts are estimates, and a hand-out is
  /// a change (commit after it). Default: false.
  virtual bool shared() const noexcept {
    return false;
  }

  /// Makes every change since the last successful `commit()` durable, as one
  /// transaction (group commit). May block for the file system's sync.
  ///
  /// On error the group was rolled back and the store's queue matches its
  /// file again: the pushes listed by `lost_pushes()` were not stored (they
  /// are gone from the queue too; reject them); every other change (pops,
  /// removes, outcomes, failures, keys) is kept and retried by the next
  /// commit. A failed write before the commit rolls the group back the same
  /// way and is reported by this call. Default: `none`.
  virtual caf::error commit() {
    return caf::none;
  }

  /// Drops every change since the last successful `commit()`: the store
  /// matches its file again. Called when a queue actor died in the middle
  /// of a group, before its replacement sends the unanswered changes
  /// again. Default: nothing (changes of a non-durable store are final).
  virtual void discard() {
    // nop
  }

  /// The pushes dropped by the group that the last `commit()` reported as
  /// failed; empty after a successful one. Default: empty.
  virtual std::vector<attempt_id> lost_pushes() const {
    return {};
  }

  /// The operations whose push or outcome the last successful `commit()`
  /// refused because this store no longer held their lease (a store that
  /// checks leases only when it sends a group's batched changes; others
  /// refuse at once with `lease_lost`). Their changes were not stored:
  /// answer them as refused. Default: empty.
  virtual std::vector<uint64_t> fenced() const {
    return {};
  }

  /// Sets the unique key of `operation`, stored with its first entry (the
  /// next `push` of that operation) or on its row if it has one already.
  /// Default: ignored.
  virtual caf::error set_key(uint64_t /* operation */, std::string /* key */) {
    return caf::none;
  }

  /// Sets the options `operation` was submitted with (`job_options`: its
  /// policy, priority and concurrency key), stored with its first entry
  /// (the next `push` of that operation) and returned by `unfinished` and
  /// `lookup`. Default: ignored (the entries carry priority and key).
  virtual caf::error set_options(uint64_t /* operation */,
                                 job_options /* opts */) {
    return caf::none;
  }

  /// Returns the id of an operation with unique key `key` that is not
  /// finished (queued or running), or that finished (done or failed, not
  /// cancelled) within `window` before `now`. Default: none.
  virtual std::optional<uint64_t> find_key(const std::string& /* key */,
                                           time_point /* now */,
                                           caf::timespan /* window */) {
    return std::nullopt;
  }

  /// Appends `x` to the attempt history of `operation`. Default: ignored.
  virtual caf::error note_failure(uint64_t /* operation */,
                                  const attempt_failure& /* x */) {
    return caf::none;
  }

  /// Records that `operation` finished with `result` at `now` (the queue's
  /// clock, as for `find_key`): its entry leaves the queue for good, its
  /// outcome stays for `lookup`. Default: ignored.
  virtual caf::error finish(uint64_t /* operation */,
                            const caf::message& /* result */,
                            time_point /* now */) {
    return caf::none;
  }

  /// Records that `operation` failed for good with `failure` at `now`; as
  /// above otherwise. Default: ignored.
  virtual caf::error finish(uint64_t /* operation */,
                            const caf::error& /* failure */,
                            time_point /* now */) {
    return caf::none;
  }

  /// The newest operations that failed for good (`pool_errc::
  /// operation_failed`, not cancelled) within `max_age` before `now`, at
  /// most `limit`, newest first, with payload, history, key and options:
  /// the dead set a restarted pool lists again. Called before the queue
  /// actor touches the store. May block on I/O. Default: none.
  virtual std::vector<failed_operation>
  failed_operations(size_t /* limit */, caf::timespan /* max_age */,
                    time_point /* now */) {
    return {};
  }

  /// Deletes `operation`, which failed for good, with its attempt history
  /// (an operator retried or discarded it); nothing for any other state.
  /// A change: durable with the next `commit()`. Default: ignored.
  virtual caf::error forget_failed(uint64_t /* operation */) {
    return caf::none;
  }

  // -- the jobs view over a shared store ---------------------------------------

  /// A page of the jobs view (`job_filter`, `job_page`) read from the store
  /// itself: for a `shared()` store, every shepherd's operations on the
  /// queue, not only this process's. Lists the unfinished ones (running
  /// with the holding store's name as `holder`, waiting, delayed,
  /// retrying) and those kept for a dead set (failed, cancelled) that
  /// ended within `dead_age` before `now`; in id order, looking at no more
  /// than `job_scan_budget` operations (then `next_after` is set). `total`
  /// counts the unfinished ones (an estimate a store may cache briefly).
  /// May block on I/O. Default: an empty page
  /// (a store that is not shared is listed by its shepherd).
  virtual caf::expected<job_page> list_jobs(const job_filter& /* filter */,
                                            caf::timespan /* dead_age */,
                                            time_point /* now */) {
    return job_page{};
  }

  /// Takes out of a `shared()` store at most `limit` operations kept for a
  /// dead set (failed or cancelled within `dead_age` before `now`) that
  /// match `filter` as a listing's pages from `filter.after` on would (its
  /// `limit` aside), in id order: for a retry (`discard` false) they are
  /// deleted with their history, for the caller to submit again; for a
  /// discard they are marked `discarded` (`lookup` says so until the
  /// retention prunes them). Two stores never take the same operation. A
  /// change: durable with the next `commit()`. Default: nothing taken.
  virtual caf::expected<ended_taken>
  take_ended(const job_filter& /* filter */, size_t /* limit */,
             caf::timespan /* dead_age */, bool /* discard */,
             time_point /* now */) {
    return ended_taken{};
  }

  /// Returns what the store knows about `operation`; `nullopt` for an
  /// unknown (or unreadable) one. Default: `nullopt`.
  virtual std::optional<operation_record> lookup(uint64_t /* operation */) {
    return std::nullopt;
  }

  /// The operations that were accepted but not finished when the store was
  /// opened, with payload, attempt, history and key; `state` tells whether
  /// the operation was `running` (an interrupted attempt) or `queued` at
  /// that moment. Their entries are in the queue already (running ones were
  /// made due again at open: at-least-once), so `pop_due` hands them out; a
  /// restarted shepherd adopts them. Default: empty.
  virtual std::vector<operation_record> unfinished() {
    return {};
  }

  /// The highest operation id ever stored; a restarted shepherd numbers new
  /// operations after it. Default: 0.
  virtual uint64_t last_operation_id() {
    return 0;
  }

  // -- shared stores: leases and notifications --------------------------------

  /// How often the queue must call `renew_leases`; `nullopt` (the default)
  /// for a store without leases.
  virtual std::optional<caf::timespan> lease_interval() const {
    return std::nullopt;
  }

  /// Renews the leases of every attempt this store handed out and has not
  /// seen finished, and takes back the expired leases of other stores of
  /// the queue (each a failed attempt in the history, the operation due
  /// again). Returns the operations whose lease this store lost (taken
  /// back by another store): their attempts are stale. A change: commit
  /// after it. Default: none.
  virtual caf::expected<std::vector<uint64_t>>
  renew_leases(time_point /* now */) {
    return std::vector<uint64_t>{};
  }

  /// Sets the function called when notifications arrive (new work,
  /// outcomes), and at least every safety-poll interval without them; once
  /// called, not again before the next `poll_notifications`. It runs on
  /// another thread: it must only wake the queue (e.g. send it a message),
  /// which then calls `poll_notifications`. Default: ignored.
  virtual void set_wakeup(std::function<void()> /* f */) {
    // nop
  }

  /// Returns and clears what arrived since the last call. Never blocks.
  /// Default: nothing.
  virtual store_notifications poll_notifications() {
    return {};
  }

  // -- retention --------------------------------------------------------------

  /// How often the queue should call `prune`; `nullopt` (the default) when
  /// the store keeps finished operations forever.
  virtual std::optional<caf::timespan> prune_interval() const {
    return std::nullopt;
  }

  /// Deletes at most `limit` operations that finished (done, failed or
  /// cancelled) longer than the store's retention before `now` (the
  /// queue's clock), oldest first, with their outcomes and attempt
  /// histories; ids are never reused. Returns how many went: when that is
  /// `limit`, more may be due, so call again soon. Written like every
  /// other change: durable with the next `commit()`. May block on I/O.
  /// Default: 0.
  virtual caf::expected<size_t> prune(time_point /* now */,
                                      size_t /* limit */) {
    return size_t{0};
  }
};

} // namespace pool

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(pool::ended_taken)
