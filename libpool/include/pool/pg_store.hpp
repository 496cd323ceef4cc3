#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

#include "pool/detail/durable_store.hpp"
#include "pool/pg_options.hpp"
#include "pool/work_store.hpp"

namespace pool {

namespace detail {

class pg_batch;
class pg_claim_size;
class pg_conn;
class pg_group;
class pg_listener;
struct pg_change;

} // namespace detail

/// A durable store shared by many stores in many processes: the queue and
/// every operation's outcome in PostgreSQL tables. See docs/postgres.md.
///
/// - Entries are claimed with `SELECT ... FOR UPDATE SKIP LOCKED`: two
///   stores never hand out the same entry. A claimed attempt is leased to
///   this store (`renew_leases` keeps the leases alive; any store of the
///   queue takes back an expired one, counting it as a failed attempt with
///   history: at-least-once).
/// - Fencing: each claim gets a token; `finish`, `note_failure`, `remove`
///   and a retry's `push` of an attempt whose lease was taken back fail
///   with `pool_errc::lease_lost` and change nothing: the late outcome is
///   stale.
/// - Changes go into one open transaction that `commit()` ends (group
///   commit); nothing is durable before `commit()` returned `none`.
/// - Unique keys: an unfinished operation's key is unique per queue (a
///   unique index), so `set_key` or `push` of a key that another store
///   took fails with `pool_errc::key_taken` carrying the other id.
/// - Options (`set_options`) are stored with the operation's first push:
///   its priority orders claims, and a shepherd that claims it runs it
///   with its attempts and timeout.
/// - `LISTEN/NOTIFY`: commits with new entries or outcomes notify the
///   queue's channel; a listener thread calls the `set_wakeup` callback,
///   and `poll_notifications` says what happened.
/// - Operation ids come from a block reserved at open (block << 32), so
///   stores never number alike.
/// - Outages: while the server is out of reach, every change is kept and
///   written by the first commit that reaches it again; pushes are given
///   up (`lost_pushes`) once the outage outlasts `outage_limit`.
/// - Attempts are spent only by running: a lease taken back from an
///   attempt that was never handed out costs no attempt; a store that
///   closes gives back what it holds at once (unstarted), and the leases
///   of a store whose process is gone (its session lock released) are
///   taken back without waiting for them to expire.
///
/// Payloads, results and errors are stored with CAF's binary serializer,
/// as in `sqlite_store`. Times are the server's clock (the offset to the
/// actor clock is measured at open and at each lease renewal), so that
/// stores on several hosts agree on due times and leases.
///
/// Thread safety: as any `work_store`, used by one actor at a time, except
/// for `set_wakeup`'s callback, which runs on the listener thread. Every
/// member may block on the network. No exception escapes any member.
class pg_store final : public detail::durable_store {
public:
  /// Application name in the schema's `meta` table.
  static constexpr const char* application = "caf-pool";

  /// The schema version this build reads and writes; older schemas are
  /// migrated at open.
  static constexpr int32_t schema_version = 7;

  /// Connects to the server `conninfo` names (a `postgres://` URI or
  /// `key=value` pairs, as libpq takes them), creates or migrates the
  /// schema, and starts the listener thread. Fails with `invalid_option`
  /// for a conninfo that does not parse or bad `opts`; `store_failed` when
  /// the server cannot be reached, refuses the login or TLS, or the user
  /// may not create the schema; `store_incompatible` for a schema of that
  /// name that belongs to another program or to a newer version. Nothing
  /// is created unless the whole schema is. Blocks while connecting.
  static caf::expected<std::shared_ptr<pg_store>>
  open(caf::actor_system& sys, std::string conninfo, pg_options opts = {});

  ~pg_store() override;

  pg_store(const pg_store&) = delete;

  pg_store& operator=(const pg_store&) = delete;

  /// The server, as `postgres://user@host:port/dbname` (no password).
  const std::string& target() const noexcept;

  /// This store's name in leases and attempt histories: host, pid and id
  /// block.
  const std::string& owner() const noexcept {
    return owner_;
  }

  const pg_options& options() const noexcept {
    return opts_;
  }

  // -- work_store -------------------------------------------------------------

  caf::error push(work_record x, time_point due, time_point now) override;

  std::optional<work_record> pop_due(time_point now) override;

  std::optional<time_point> next_due(time_point now) override;

  size_t remove(uint64_t operation) override;

  size_t available(time_point now) override;

  size_t delayed(time_point now) override;

  bool shared() const noexcept override {
    return true;
  }

  caf::error commit() override;

  void discard() override;

  std::vector<uint64_t> fenced() const override;

  caf::error set_key(uint64_t operation, std::string key) override;

  /// Claims then sort every due entry of the queue by priority plus one
  /// level per `step` waited (none: by priority, using the index).
  void set_priority_aging(std::optional<caf::timespan> step) override;

  /// Claims keep the concurrency limits per key across every store on
  /// the queue: a key's claimed and running entries count against its
  /// limit, claims take turns under the queue's lock, and a claim's due
  /// entries take turns between keys (docs/postgres.md, "Limits per key
  /// across processes").
  void set_key_limits(const key_flow_options& limits) override;

  std::optional<uint64_t> find_key(const std::string& key, time_point now,
                                   caf::timespan window) override;

  caf::error note_failure(uint64_t operation,
                          const attempt_failure& x) override;

  caf::error finish(uint64_t operation, const caf::message& result,
                    time_point now) override;

  caf::error finish(uint64_t operation, const caf::error& failure,
                    time_point now) override;

  /// Over the whole queue (every store's failures), newest first
  /// (pg_dead.cpp).
  std::vector<failed_operation> failed_operations(size_t limit,
                                                  caf::timespan max_age,
                                                  time_point now) override;

  caf::error forget_failed(uint64_t operation) override;

  /// Every store's operations on the queue (pg_jobs.cpp).
  caf::expected<job_page> list_jobs(const job_filter& filter,
                                    caf::timespan dead_age,
                                    time_point now) override;

  /// Locks what it takes (`FOR UPDATE SKIP LOCKED`) until the commit
  /// (pg_jobs.cpp).
  caf::expected<ended_taken> take_ended(const job_filter& filter,
                                        size_t limit, caf::timespan dead_age,
                                        bool discard, time_point now) override;

  std::optional<operation_record> lookup(uint64_t operation) override;

  uint64_t last_operation_id() override;

  std::optional<caf::timespan> lease_interval() const override;

  caf::expected<std::vector<uint64_t>> renew_leases(time_point now) override;

  std::optional<caf::timespan> prune_interval() const override;

  caf::expected<size_t> prune(time_point now, size_t limit) override;

  void set_wakeup(std::function<void()> f) override;

  store_notifications poll_notifications() override;

private:
  /// A claim of this store: the lease token that fences it.
  struct held_attempt {
    uint32_t attempt;
    int64_t token;
  };

  /// A claimed entry not handed out yet.
  struct claimed_entry {
    work_record record;
    /// Claimed in the open group (gone if it rolls back).
    bool in_group;
    /// Its place in this store's hand-out order (pg_leases.cpp).
    int64_t handout;
  };

  /// Cached counts of the queue's unclaimed entries.
  struct queue_counts {
    size_t available = 0;
    size_t delayed = 0;
    std::optional<int64_t> next_due;
    int64_t read_at = 0;
    bool stale = true;
    /// The server is out of reach: nothing can be claimed until it is back.
    bool unreachable = false;
  };

  pg_store(caf::actor_system& sys, std::string conninfo, pg_options opts);

  caf::error init();

  /// Measures the offset between the server's clock and the actor clock.
  caf::error sync_clock();

  /// Claims up to `claim_batch` due entries into `claimed_` (pg_claim.cpp).
  caf::error claim(time_point now);

  /// Takes back the expired leases of the queue and those of stores whose
  /// process is gone (pg_leases.cpp); records each attempt that had started
  /// as a failed attempt. Unless `always`, at most every second.
  caf::error reclaim(time_point now, bool always);

  /// Runs `reclaim` once `recheck_at_` passed: the pool counts what came
  /// back, also when it has nothing else to claim (pg_leases.cpp).
  void reclaim_if_due(time_point now);

  /// The stores holding leases of the queue whose session lock has been
  /// gone for a while (pg_leases.cpp).
  caf::expected<std::vector<std::string>> gone_owners(time_point now);

  /// Gives back every attempt this store holds, unstarted (when it
  /// closes). Never throws.
  void release_all() noexcept;

  /// Writes `c` into the group. A change that the lost connection to the
  /// server rolled back is kept for the next commit: then the result is
  /// none (the outage began).
  caf::error write(detail::pg_change c, const std::string& what);

  /// Whether the connection to the server is lost (an outage).
  bool unreachable() const noexcept;

  /// After a failed commit (pg_commit.cpp): during an outage within
  /// `outage_limit`, every change waits for the next commit; else the
  /// pushes are given up (reported by `lost_pushes`). Returns the error
  /// that the commit reports.
  caf::error after_failed_commit(caf::error err);

  /// Whether the open group holds pushes not given up; if so, the
  /// earliest time an attempt to reach the server may have failed to
  /// count against them (see `after_failed_commit`).
  std::optional<std::chrono::steady_clock::time_point> waiting_pushes() const;

  /// Reads the counts again when stale, at most every 20 ms.
  void refresh_counts(time_point now);

  /// Outside a group, opens a lost connection again (before a read).
  caf::error reconnect_if_idle();

  /// After a rollback: drops what the group had claimed.
  caf::error after_rollback();

  /// A drain's deadline stopped `operation`: a held attempt goes back
  /// unstarted (pg_records.cpp).
  caf::error stopped(uint64_t operation);

  caf::error finish_impl(uint64_t operation, int state,
                         std::vector<char> result, std::vector<char> error,
                         time_point now);

  /// `lease_lost` for `operation`, saying `why`.
  caf::error lease_lost(uint64_t operation, const std::string& why) const;

  int64_t to_server(time_point x) const noexcept;

  time_point from_server(int64_t x) const noexcept;

  pg_options opts_;
  std::unique_ptr<detail::pg_conn> db_;
  /// Pushes and outcomes of the open group not sent yet (pg_batch.hpp).
  std::unique_ptr<detail::pg_batch> batch_;
  std::unique_ptr<detail::pg_claim_size> claim_size_;
  /// When the entries in `claimed_` were claimed.
  time_point claimed_at_;
  /// Owned by `durable_store`.
  detail::pg_group* group_ = nullptr;
  std::unique_ptr<detail::pg_listener> listener_;
  std::string conninfo_;
  std::string owner_;
  /// The notification channel of the queue.
  std::string channel_;
  /// Server clock minus actor clock, in nanoseconds.
  int64_t clock_offset_ = 0;
  /// The first id of this store's block, and the last id pushed from it.
  uint64_t id_base_ = 0;
  uint64_t last_id_ = 0;
  std::unordered_map<uint64_t, held_attempt> held_;
  std::vector<claimed_entry> claimed_;
  queue_counts counts_;
  /// `set_key_limits`: whether any key has a limit; the concurrency limit
  /// and start rate (starts, period in ns) of every key (none: no limit);
  /// the keys with limits of their own and theirs (0: none), as the
  /// PostgreSQL arrays `claim_keyed` takes (pg_claim.cpp).
  bool key_limited_ = false;
  /// Whether any key has a start rate (pg_claim.cpp).
  bool key_rated_ = false;
  std::optional<int64_t> every_key_limit_;
  std::optional<std::pair<int64_t, int64_t>> every_key_rate_;
  std::vector<char> own_keys_;
  std::vector<char> own_limits_;
  std::vector<char> own_starts_;
  std::vector<char> own_periods_;
  /// `set_priority_aging`.
  std::optional<caf::timespan> aging_;
  /// What the open group must notify at its commit.
  bool notify_work_ = false;
  std::vector<uint64_t> notify_finished_;
  /// What the last successful commit refused (see `fenced`).
  std::vector<uint64_t> fenced_;
  /// Since when the server is out of reach (the first change it lost).
  std::optional<time_point> outage_since_;
  /// Past `outage_limit`: since when pushes wait that an attempt to reach
  /// the server must fail after before they are given up (pg_commit.cpp).
  std::optional<std::chrono::steady_clock::time_point> pushes_since_;
  /// Something was given up in this outage already.
  bool outage_gave_up_ = false;
  /// Keys whose `find_key` failed: a push with one is refused until a
  /// lookup of it succeeds (pg_records.cpp).
  std::unordered_set<std::string> unchecked_keys_;
  /// Keys that `find_key` found free, with the start of its window (the
  /// server's clock): the push checks them again (pg_records.cpp).
  std::unordered_map<std::string, int64_t> key_since_;
  /// A lookup failed: ask the shepherd to look up again (`missed`).
  bool reread_ = false;
  /// The session locks of the queue's stores (pg_leases.cpp).
  int32_t lock_space_ = 0;
  int64_t block_ = 0;
  /// Stores whose session lock was found gone, and when.
  std::unordered_map<std::string, time_point> absent_since_;
  time_point owners_checked_;
  /// When `reclaim` may find more to take back (a grace ends), or a start
  /// token of a rate-limited key comes back (set by `claim`): `next_due`
  /// wakes the pool then, also when nothing else is due.
  std::optional<time_point> recheck_at_;
  /// When this store's connection was (re)made, by the server's clock, as
  /// `reclaim` first saw it; the connects it has seen.
  int64_t connected_at_ = 0;
  uint64_t seen_connects_ = 0;
  /// Claims made; the hand-out place of the last entry handed out, and of
  /// the last one the `owners` table has (pg_leases.cpp).
  int64_t claims_ = 0;
  int64_t handed_ = 0;
  int64_t handed_written_ = 0;
};

} // namespace pool
