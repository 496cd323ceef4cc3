#pragma once

// Private to `pg_store`: the changes of a group that go to the server as
// one statement each kind, instead of one round trip per change.
//
// Two kinds are batched, the two that every operation makes: the push of a
// new operation (no key, no lease) and the outcome of an attempt this store
// holds. The group hands them to the batch; the batch sends them as one
// `INSERT ... SELECT FROM unnest(...)` and one `UPDATE ... FROM unnest(...)`
// before the group's next write of another kind, read or commit, so the
// order of the group's changes stays as written. Claims, lease renewals
// and pruning do not wait for them: no row they touch is in a batch (new
// rows are not claimable before the commit anyway; an outcome's row is
// leased to this store). Their parameters are PostgreSQL
// binary arrays, built as the changes come; the statements are planned
// for each call.
//
// Fencing moves to the flush: a row that the statement did not change (the
// lease was taken back, the operation finished elsewhere) is listed in
// `refused()`, and the store reports it after the commit (see
// `work_store::fenced`).
//
// Claims, a round trip each too, adapt their size to the pool's pace
// (`pg_claim_size`).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include "store_codec.hpp"

namespace pool::detail {

class pg_conn;
struct pg_change;

/// A PostgreSQL array in binary format (`array_send`), built element by
/// element.
class pg_array {
public:
  /// `oid`: the element type (20 int8, 23 int4, 25 text, 17 bytea).
  explicit pg_array(uint32_t oid) : oid_(oid) {
    // nop
  }

  void add_int(int64_t x);

  void add_bytes(const char* data, size_t size);

  void add_text(const std::string& x) {
    add_bytes(x.data(), x.size());
  }

  void add_null();

  size_t size() const noexcept {
    return size_;
  }

  /// The array's bytes: header, then the elements.
  std::vector<char> bytes() const;

  void clear() noexcept {
    size_ = 0;
    nulls_ = false;
    body_.clear();
  }

private:
  uint32_t oid_;
  size_t size_ = 0;
  bool nulls_ = false;
  std::vector<char> body_;
};

/// How many entries the next claim takes. A claim is a round trip, so a
/// pool that hands out work quickly claims more at once; but what a store
/// claimed and has not handed out yet is leased to it, out of reach of the
/// other stores, so a pool whose entries wait claims fewer. The size
/// starts at 8 (or the maximum, if lower), doubles while full claims are
/// handed out within 10 ms, and halves when a claim's entries took 100 ms
/// or more to go out.
class pg_claim_size {
public:
  static constexpr caf::timespan quick = std::chrono::milliseconds(10);
  static constexpr caf::timespan slow = std::chrono::milliseconds(100);

  explicit pg_claim_size(size_t max) : max_(max), size_(std::min<size_t>(8, max)) {
    // nop
  }

  /// The size of the next claim.
  size_t next() const noexcept {
    return size_;
  }

  /// A claim asked for `asked` entries and got `got`.
  void claimed(size_t asked, size_t got) noexcept {
    full_ = got >= asked && got > 0;
  }

  /// The entries of the last claim went out within `took`.
  void drained(caf::timespan took) noexcept {
    if (took >= slow)
      size_ = std::max<size_t>(size_ / 2, 1);
    else if (full_ && took <= quick)
      size_ = std::min(size_ * 2, max_);
    full_ = false;
  }

private:
  size_t max_;
  size_t size_;
  bool full_ = false;
};

class pg_batch {
public:
  /// Flushes by itself at this many rows.
  static constexpr size_t max_rows = 1000;

  /// For the store's tables in `schema`.
  explicit pg_batch(const std::string& schema);

  /// Whether `x` can wait in a batch: a push of a new operation without a
  /// key, or the outcome of a held attempt.
  static bool takes(const pg_change& x) noexcept;

  /// Adds `x` (`takes(x)` must hold).
  void add(const pg_change& x);

  /// Whether a push of `operation` waits (one statement cannot store a
  /// row twice: flush first).
  bool has_push(uint64_t operation) const {
    return pushes_.pending.count(operation) > 0;
  }

  /// Rows waiting.
  size_t size() const noexcept {
    return pushes_.ids.size() + finishes_.ids.size();
  }

  /// Sends what waits. Rows the server did not change go to `refused()`.
  /// An error leaves the transaction aborted (the group rolls back).
  caf::error flush(pg_conn& db);

  /// Drops what waits and what was refused (the group rolled back: its
  /// kept changes come again).
  void clear() noexcept;

  /// Removes from `ids` the operations in `refused()`.
  void drop_refused(std::vector<uint64_t>& ids) const;

  /// Operations whose batched change the server refused since `clear()`.
  const std::vector<uint64_t>& refused() const noexcept {
    return refused_;
  }

  /// Adds `operation` to `refused()`: a push the server refused when the
  /// group wrote it again after a rollback (its key was taken, its lease
  /// lost meanwhile).
  void refuse(uint64_t operation) {
    refused_.push_back(operation);
  }

  /// Takes back the last `refuse(operation)`: the push was refused to its
  /// caller at once (not in a replay).
  void unrefuse(uint64_t operation) {
    auto i = std::find(refused_.rbegin(), refused_.rend(), operation);
    if (i != refused_.rend())
      refused_.erase(std::next(i).base());
  }

  /// The push of `(operation, attempt)` was given up (an outage outlasted
  /// its limit): the group drops it when it writes its changes again.
  void give_up(uint64_t operation, int64_t attempt) {
    given_up_.emplace(operation, attempt);
  }

  /// Whether `x` is a push that was given up.
  bool given_up(const pg_change& x) const;

  /// Forgets the given-up pushes (a commit went through: they are gone).
  void forget_given_up() noexcept {
    given_up_.clear();
  }

private:
  struct push_columns {
    std::vector<uint64_t> ids;
    /// Every store pushes to one queue.
    std::string queue;
    std::unordered_set<uint64_t> pending;
    pg_array id{20}, attempt{23}, due{20}, payload{17}, submitted{20};
    pg_array priority{23}, ckey{25}, options{17};
  };

  struct finish_columns {
    std::vector<uint64_t> ids;
    /// The store's owner name: the same for every held attempt.
    std::string owner;
    pg_array id{20}, state{23}, result{17}, error{17}, finished{20}, token{20};
  };

  /// Runs `sql`, whose RETURNING names the rows it changed; the ids of
  /// `sent` it does not name go to `refused_`.
  caf::error send(pg_conn& db, const std::string& sql,
                  const std::vector<db_value>& params,
                  const std::vector<uint64_t>& sent, const std::string& what);

  /// The statements' texts. They run unprepared, planned for each call's
  /// arrays: a plan cached while the table was small would scan the whole
  /// table once it is large (until the statistics catch up).
  std::string push_sql_;
  std::string finish_sql_;
  push_columns pushes_;
  finish_columns finishes_;
  std::vector<uint64_t> refused_;
  std::set<std::pair<uint64_t, int64_t>> given_up_;
};

} // namespace pool::detail
