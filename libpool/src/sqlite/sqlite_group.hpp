#pragma once

// Private to `sqlite_store`: group commit (group_commit.hpp) over its
// SQLite connection.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/error.hpp>

#include "group_commit.hpp"
#include "sqlite_db.hpp"

namespace pool::detail {

/// One write of a group.
struct change {
  sql statement;
  std::vector<sql_value> args;
  /// The operation whose queue entry this change takes out of the queue
  /// (pop, remove, finish); 0 for none.
  uint64_t leaves_queue = 0;
};

/// The `group_commit` backend of an SQLite connection: every failed write
/// rolls the group back.
class sqlite_backend {
public:
  using change = detail::change;

  explicit sqlite_backend(sqlite_db& db) : db_(&db) {
    // nop
  }

  /// Every change is written at once: nothing waits.
  caf::error flush() {
    return caf::none;
  }

  caf::error begin() {
    return db_->run(sql::begin, {}, "starting a transaction");
  }

  caf::error end() {
    return db_->run(sql::commit, {}, "committing");
  }

  caf::error rollback() {
    return db_->run(sql::rollback, {}, "rolling back");
  }

  bool in_transaction() const noexcept {
    return db_->in_transaction();
  }

  caf::error apply(const change& x, const std::string& what) {
    return db_->run(x.statement, x.args, what);
  }

  bool aborts(const caf::error&) const noexcept {
    return true;
  }

  const std::string& location() const noexcept {
    return db_->path();
  }

private:
  sqlite_db* db_;
};

class sqlite_group : public group_commit<sqlite_backend> {
public:
  sqlite_group(sqlite_db& db, std::function<caf::error()> reload)
      : group_commit<sqlite_backend>(sqlite_backend{db}, std::move(reload)) {
    // nop
  }
};

} // namespace pool::detail
