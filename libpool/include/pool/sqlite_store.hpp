#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

#include "pool/detail/durable_store.hpp"
#include "pool/options.hpp"
#include "pool/store_factory.hpp"
#include "pool/timed_queue.hpp"
#include "pool/work_store.hpp"

namespace pool {

namespace detail {

class sqlite_db;
class sqlite_group;
class store_owner;

} // namespace detail

/// How a `sqlite_store` opens its file, as one value with chained setters.
/// Setters never fail; `validate()` (called by `sqlite_store::open`) names
/// the first bad field. Plain value: copy it freely, from any thread.
class sqlite_options {
public:
  /// Durability of a commit; default `sqlite_sync::full`.
  sqlite_options& synchronous(sqlite_sync x) {
    synchronous_ = x;
    return *this;
  }

  sqlite_sync synchronous() const noexcept {
    return synchronous_;
  }

  /// How long a statement waits for a lock held by another connection
  /// (a backup tool, the `sqlite3` shell) before failing; default 5 s.
  sqlite_options& busy_timeout(caf::timespan x) {
    busy_timeout_ = x;
    return *this;
  }

  caf::timespan busy_timeout() const noexcept {
    return busy_timeout_;
  }

  /// Upper bound for the file's size in bytes (`PRAGMA max_page_count`,
  /// rounded down to whole pages); a write beyond it fails as a full disk
  /// would. 0 (the default) means no bound.
  sqlite_options& max_size(uint64_t bytes) {
    max_size_ = bytes;
    return *this;
  }

  uint64_t max_size() const noexcept {
    return max_size_;
  }

  /// Whether `open` runs `PRAGMA quick_check` (reads the whole file) to
  /// refuse a damaged file up front; default true.
  sqlite_options& verify_on_open(bool x) {
    verify_on_open_ = x;
    return *this;
  }

  bool verify_on_open() const noexcept {
    return verify_on_open_;
  }

  /// Finished operations (done, failed, cancelled) are deleted, with
  /// their outcome and history, once they finished longer than `age` ago
  /// (`prune`, which the queue calls every `prune_interval()`). Must be
  /// greater than zero. Default: kept forever.
  sqlite_options& retention(caf::timespan age) {
    retention_ = age;
    return *this;
  }

  const std::optional<caf::timespan>& retention() const noexcept {
    return retention_;
  }

  /// Name of a registered SQLite VFS to use; empty (the default) for the
  /// platform's default VFS.
  sqlite_options& vfs(std::string name) {
    vfs_ = std::move(name);
    return *this;
  }

  const std::string& vfs() const noexcept {
    return vfs_;
  }

  /// Returns `pool_errc::invalid_option` naming the first bad field, or
  /// `none`.
  caf::error validate() const;

private:
  sqlite_sync synchronous_ = sqlite_sync::full;
  caf::timespan busy_timeout_ = std::chrono::seconds(5);
  uint64_t max_size_ = 0;
  bool verify_on_open_ = true;
  std::optional<caf::timespan> retention_;
  std::string vfs_;
};

/// A durable store: the queue and every operation's outcome in an SQLite
/// file (WAL journal mode), surviving a process crash (and, with
/// `sqlite_sync::full`, a power loss) once `commit()` returned `none`.
///
/// Changes are written into one open transaction that `commit()` ends
/// (group commit); closing the store discards an uncommitted group. The
/// queue itself (due FIFO and delayed heap, payloads included) is mirrored
/// in memory, so `available`, `delayed`, `next_due` and `pop_due` never
/// query the file.
///
/// Due times are stored as wall-clock (`system_clock`) nanoseconds, so a
/// delayed entry keeps its due time across a restart; the store converts
/// with the offset between the wall clock and the actor clock measured at
/// `open`. An operation has one row: `push` of an operation that has one
/// (a retry) updates it and replaces the operation's queue entry, `pop_due`
/// marks it running, `remove` cancelled, `finish` done or failed. Rows are
/// kept after they finish, for `lookup` and `find_key`. Operation ids must
/// be below 2^63.
///
/// Payloads, results and errors are stored with CAF's binary serializer:
/// their types must be serializable and known to the actor system (see
/// `pool::configure`) before the store is opened; the actor system must
/// outlive the store.
///
/// Thread safety: as any `work_store`, used by one actor at a time. Every
/// member may block on the file system (`commit()` for a sync).
/// No exception escapes any member.
class sqlite_store final : public detail::durable_store {
public:
  /// Application string in the file's `meta` table and, as
  /// `PRAGMA application_id`, in its header.
  static constexpr const char* application = "caf-pool";

  /// `PRAGMA application_id` of a store file: "CAFP".
  static constexpr int32_t application_id = 0x43414650;

  /// The schema version this build writes; it reads version 1 too and
  /// migrates such a file when it opens it (2 added per-operation options).
  static constexpr int32_t schema_version = 2;

  /// Opens or creates the store at `path` and takes ownership of it.
  /// Running operations of the previous run are made due again
  /// (at-least-once). Fails with `store_in_use` while another store (in
  /// this process or another) has the file open, naming its pid, host and
  /// since when; `store_incompatible` for a file that is not a store of
  /// this schema version, `store_corrupt` for a damaged one, `store_failed`
  /// when the file cannot be created, read or written (e.g. a read-only
  /// directory), `invalid_option` for bad `opts` or an empty `path`
  /// (SQLite would open a temporary database). Blocks while reading the
  /// file, never for the owner.
  ///
  /// Ownership is an exclusive `flock` on the sidecar file
  /// `owner_file(path)`, which also names the owner. The kernel releases
  /// it when the owner closes the store or its process ends in any way, so
  /// the owner of a crashed process is taken over at once, and the file a
  /// refused open leaves behind is never a stale lock. Keep the store on a
  /// local file system (as SQLite's WAL mode requires anyway).
  static caf::expected<std::shared_ptr<sqlite_store>>
  open(caf::actor_system& sys, std::string path, sqlite_options opts = {});

  /// The sidecar file that holds the owner's lock of the store at `path`:
  /// `<path>-owner`, `path` with symbolic links resolved. It stays when the
  /// store closes (empty then); delete it only with the store file.
  static std::string owner_file(const std::string& path);

  ~sqlite_store() override;

  sqlite_store(const sqlite_store&) = delete;

  sqlite_store& operator=(const sqlite_store&) = delete;

  /// The file this store was opened on.
  const std::string& path() const noexcept {
    return path_;
  }

  /// The owner the sidecar file still named when this store took the file
  /// over: a process that ended without closing it (a crash, SIGKILL), as
  /// "pid …, host …, since …"; empty when the previous owner closed the
  /// store or there was none.
  const std::string& taken_over_from() const noexcept;

  // -- work_store -------------------------------------------------------------

  caf::error push(work_record x, time_point due, time_point now) override;

  std::optional<work_record> pop_due(time_point now) override;

  std::optional<time_point> next_due(time_point now) override;

  size_t remove(uint64_t operation) override;

  size_t available(time_point now) override;

  size_t delayed(time_point now) override;

  void set_priority_aging(std::optional<caf::timespan> step) override {
    queue_.set_aging(step);
  }

  caf::error set_key(uint64_t operation, std::string key) override;

  std::optional<uint64_t> find_key(const std::string& key, time_point now,
                                   caf::timespan window) override;

  caf::error note_failure(uint64_t operation,
                          const attempt_failure& x) override;

  caf::error finish(uint64_t operation, const caf::message& result,
                    time_point now) override;

  caf::error finish(uint64_t operation, const caf::error& failure,
                    time_point now) override;

  std::optional<operation_record> lookup(uint64_t operation) override;

  std::vector<operation_record> unfinished() override;

  /// Reads the failed rows newest first, skipping those whose error is not
  /// `operation_failed` (cancelled, drain deadline).
  std::vector<failed_operation> failed_operations(size_t limit,
                                                  caf::timespan max_age,
                                                  time_point now) override;

  caf::error forget_failed(uint64_t operation) override;

  uint64_t last_operation_id() override;

  /// A tenth of the retention, within [1 s, 10 min]; `nullopt` without
  /// retention.
  std::optional<caf::timespan> prune_interval() const override;

  /// Without retention: 0. Records the highest id first, so that ids stay
  /// unique when the newest rows go.
  caf::expected<size_t> prune(time_point now, size_t limit) override;

private:
  sqlite_store(caf::actor_system& sys, std::string path);

  caf::error init(const sqlite_options& opts);

  /// Loads the queue from the file: rows with state `queued` and, at open,
  /// `running` (then also records them in `unfinished_`); leaves out what
  /// the group's kept changes take out of the queue.
  caf::error load_queue(bool at_open);

  /// Drops `operation`'s entries from the in-memory queue.
  size_t drop(uint64_t operation);

  /// Reads the attempt history of `operation` into `out`.
  caf::error load_history(uint64_t operation,
                          std::vector<attempt_failure>& out);

  /// Records the outcome of `operation`: `blob` is its serialized result
  /// (`done`) or error (`failed`).
  caf::error finish_impl(uint64_t operation, operation_state state,
                         std::vector<char> blob, time_point now);

  std::optional<operation_record> lookup_impl(uint64_t operation);

  std::string path_;
  /// Released last: no other store opens the file before this one closed.
  std::unique_ptr<detail::store_owner> owner_;
  std::unique_ptr<detail::sqlite_db> db_;
  /// Owned by `durable_store`.
  detail::sqlite_group* group_ = nullptr;
  /// Wall clock minus actor clock, in nanoseconds, measured at open.
  int64_t wall_offset_ = 0;
  std::optional<caf::timespan> retention_;

  /// The queue, mirrored in memory.
  timed_queue queue_;
  /// Number of queue entries per operation.
  std::unordered_map<uint64_t, size_t> queued_;
  uint64_t last_id_ = 0;

  std::vector<operation_record> unfinished_;
};

} // namespace pool
