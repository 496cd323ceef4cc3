#pragma once

// Private to `sqlite_store`: the SQLite connection, its prepared statements
// and the translation of SQLite's result codes into pool errors.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <sqlite3.h>

#include "store_codec.hpp"

namespace pool {

class sqlite_options;

} // namespace pool

namespace pool::detail {

/// The prepared statements of a store, by index; their text is in
/// sqlite_schema.cpp.
enum class sql : size_t {
  begin,
  commit,
  rollback,
  upsert,
  mark_running,
  mark_cancelled,
  finish,
  add_failure,
  set_key,
  select_queue,
  select_operation,
  select_history,
  find_key,
  save_last_id,
  prune_failures,
  prune_operations,
  select_failed,
  forget_failures,
  forget_operation,
  count, // number of statements, not a statement
};

/// A value bound to a statement parameter: NULL, integer, text or blob.
using sql_value = db_value;

/// One connection to a store file. Errors name the file and carry what a
/// user can do about them. Not copyable; closing discards an open
/// transaction.
class sqlite_db {
public:
  explicit sqlite_db(std::string path);

  ~sqlite_db();

  sqlite_db(const sqlite_db&) = delete;

  sqlite_db& operator=(const sqlite_db&) = delete;

  /// Opens (or creates) the file with the busy timeout of `opts`.
  caf::error open(const sqlite_options& opts);

  sqlite3* get() const noexcept {
    return db_;
  }

  const std::string& path() const noexcept {
    return path_;
  }

  /// Builds an error of the pool category from SQLite's result code `rc`
  /// for the step described by `what`.
  caf::error fail(int rc, const std::string& what) const;

  /// Runs statements without result rows (or ignoring them).
  caf::error exec(const char* text, const std::string& what);

  /// Prepares `text`, steps it once and calls `row` with the statement if
  /// it produced a row. Returns SQLite's result code, SQLITE_OK on success.
  template <class F>
  int query_first(const char* text, F row) {
    sqlite3_stmt* ptr = nullptr;
    auto rc = sqlite3_prepare_v2(db_, text, -1, &ptr, nullptr);
    // Finalizing returns the error of the last step, handled through `rc`.
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt{
        ptr, sqlite3_finalize};
    if (rc != SQLITE_OK)
      return rc;
    rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_ROW) {
      row(stmt.get());
      return SQLITE_OK;
    }
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
  }

  /// Prepares every statement of `sql` for repeated use.
  caf::error prepare_statements();

  sqlite3_stmt* statement(sql s) const noexcept {
    return statements_[static_cast<size_t>(s)];
  }

  /// Binds `args` to statement `s` for reading rows; the caller steps it
  /// and calls `reset`. Text and blobs are bound without a copy: `args`
  /// must outlive the steps.
  caf::error bind(sql s, const std::vector<sql_value>& args,
                  const std::string& what);

  /// Binds `args` to statement `s`, steps it to completion, resets it.
  caf::error run(sql s, const std::vector<sql_value>& args,
                 const std::string& what);

  /// Resets statement `s` and clears its bindings.
  void reset(sql s) noexcept;

  /// Rows changed by the last statement.
  int changes() const noexcept {
    return sqlite3_changes(db_);
  }

  /// Whether a transaction is open.
  bool in_transaction() const noexcept {
    return db_ != nullptr && sqlite3_get_autocommit(db_) == 0;
  }

private:
  std::string path_;
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> statements_;
};

/// What a user can do about an SQLite error, by primary result code;
/// nullptr when there is no advice.
const char* advice(int rc);

/// Column `col` of the current row as text; empty for NULL.
std::string column_text(sqlite3_stmt* stmt, int col);

/// Deserializes column `col` of the current row (a blob) into `x`.
template <class T>
caf::error load_column(caf::actor_system& sys, sqlite3_stmt* stmt, int col,
                       T& x) {
  // Per SQLite's docs: first the pointer, then the size.
  auto data = sqlite3_column_blob(stmt, col);
  auto size = sqlite3_column_bytes(stmt, col);
  return load(sys, data, static_cast<size_t>(size > 0 ? size : 0), x);
}

} // namespace pool::detail
