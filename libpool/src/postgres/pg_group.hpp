#pragma once

// Private to `pg_store`: group commit (group_commit.hpp) over its libpq
// connection, with fenced writes and unique keys.

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <fmt/format.h>

#include "group_commit.hpp"
#include "pg_batch.hpp"
#include "pg_conn.hpp"
#include "pg_schema.hpp"
#include "pool/errors.hpp"

namespace pool::detail {

/// One write of a group.
struct pg_change {
  pg_sql statement;
  std::vector<db_value> args;
  /// The operation it concerns; 0 for none.
  uint64_t operation = 0;
  /// The write must change a row; changing none means that this store
  /// lost the operation's lease (fenced): refused with `lease_lost`.
  bool fenced = false;
  /// A push that carries a unique key (args[1] queue, args[5] key): runs
  /// under a savepoint; a key that another unfinished operation has is
  /// refused with `key_taken`.
  bool keyed = false;
};

/// Starts a transaction, opening the connection again first if it was
/// lost (the server restarted): libpq only notices at the next statement,
/// so a failed BEGIN on a lost connection reconnects and tries once more.
inline caf::error begin_transaction(pg_conn& db) {
  if (!db.ok())
    if (auto err = db.reconnect())
      return err;
  auto err = db.exec("BEGIN", "starting a transaction");
  if (err && !db.ok()) {
    if (auto again = db.reconnect())
      return again;
    err = db.exec("BEGIN", "starting a transaction");
  }
  return err;
}

/// `lease_lost` for `operation`.
inline caf::error lease_lost_error(uint64_t operation, const std::string& why) {
  return caf::make_error(pool_errc::lease_lost,
                         "op#" + std::to_string(operation), why);
}

/// The `group_commit` backend of a PostgreSQL connection. A lost
/// connection is opened again when the next group begins.
class pg_backend {
public:
  using change = pg_change;

  pg_backend(pg_conn& db, pg_batch& batch) : db_(&db), batch_(&batch) {
    // nop
  }

  caf::error begin() {
    batch_->clear();
    return begin_transaction(*db_);
  }

  caf::error end() {
    if (auto err = flush())
      return err;
    return db_->exec("COMMIT", "committing");
  }

  caf::error rollback() {
    batch_->clear();
    // A lost connection took its transaction with it.
    if (!db_->ok())
      return caf::none;
    return db_->exec("ROLLBACK", "rolling back");
  }

  /// Sends the batched changes (before any other statement of the group).
  caf::error flush() {
    return batch_->flush(*db_);
  }

  bool in_transaction() const noexcept {
    return db_->in_transaction();
  }

  caf::error apply(const change& x, const std::string& what) {
    if (batch_->given_up(x)) // dropped from the replay, not stored
      return lease_lost_error(x.operation, "given up: the server was out "
                                           "of reach for too long");
    if (pg_batch::takes(x)) {
      // Fenced at the flush: see pg_batch.hpp.
      if (x.statement == pg_sql::push && batch_->has_push(x.operation))
        if (auto err = flush())
          return err;
      batch_->add(x);
      return batch_->size() >= pg_batch::max_rows ? flush() : caf::none;
    }
    if (auto err = flush())
      return err;
    if (x.keyed)
      if (auto err = db_->exec("SAVEPOINT pool_key", what))
        return err;
    auto res = db_->run_raw(pg_statement_name(x.statement), x.args);
    if (auto err = db_->check(res.get(), what)) {
      if (x.keyed && pg_sqlstate(res.get()) == "23505") {
        auto refused = key_taken(x, what);
        if (is(refused, pool_errc::key_taken))
          batch_->refuse(x.operation); // (reported if this was a replay)
        return refused;
      }
      return err;
    }
    if (x.keyed)
      if (auto err = db_->exec("RELEASE SAVEPOINT pool_key", what))
        return err;
    if (x.fenced && std::atoi(PQcmdTuples(res.get())) == 0) {
      if (x.statement == pg_sql::push)
        batch_->refuse(x.operation);
      return lease_lost_error(x.operation,
                              "another store took the lease back, or the "
                              "operation finished elsewhere: this outcome "
                              "is stale and was not recorded");
    }
    return caf::none;
  }

  bool aborts(const caf::error& err) const noexcept {
    return !is(err, pool_errc::lease_lost) && !is(err, pool_errc::key_taken);
  }

  const std::string& location() const noexcept {
    return db_->target();
  }

private:
  /// After a unique violation of push `x`: back to the savepoint, then the
  /// operation that has the key.
  caf::error key_taken(const change& x, const std::string& what) {
    if (auto err = db_->exec("ROLLBACK TO SAVEPOINT pool_key", what))
      return err;
    auto& queue = std::get<std::string>(x.args[1]);
    auto& key = std::get<std::string>(x.args[5]);
    auto owner = db_->run(pg_statement_name(pg_sql::key_owner), {queue, key},
                          "looking up the owner of key " + key);
    if (!owner)
      return std::move(owner.error());
    uint64_t other = 0;
    if (PQntuples(owner->get()) > 0)
      other = static_cast<uint64_t>(pg_int(owner->get(), 0, 0));
    return caf::make_error(pool_errc::key_taken, key, other);
  }

  pg_conn* db_;
  pg_batch* batch_;
};

class pg_group : public group_commit<pg_backend> {
public:
  pg_group(pg_conn& db, pg_batch& batch, std::function<caf::error()> reload)
      : group_commit<pg_backend>(pg_backend{db, batch}, std::move(reload)) {
    // nop
  }
};

/// Runs `body()` (returning a `caf::expected`) in the open group, or, when
/// none is open, in a transaction of its own that commits at once: writes
/// that need no grouping (claims, lease renewals, pruning) never leave an
/// idle store inside a transaction. `undo()` runs when that own
/// transaction failed. With `replay`, changes that a rolled-back group
/// kept (an outage) open a group for `body` and are written with it: the
/// caller commits soon (the queue does after claims and renewals).
template <class F, class Undo>
auto in_group_or_alone(pg_group& group, pg_conn& db, F body, Undo undo,
                       bool replay = false) -> decltype(body()) {
  if (group.open() || (replay && !group.kept().empty() && !group.broken()))
    return group.write_once(body);
  if (auto& broken = group.broken())
    return broken;
  if (auto err = begin_transaction(db))
    return err;
  auto result = body();
  caf::error err;
  if (result)
    err = db.exec("COMMIT", "committing");
  else
    err = result.error();
  if (err) {
    if (db.ok() && db.in_transaction())
      // A failed rollback leaves a transaction that the next BEGIN
      // reports; nothing of this one is stored either way.
      static_cast<void>(db.exec("ROLLBACK", "rolling back"));
    undo();
    return err;
  }
  return result;
}

} // namespace pool::detail
