#include "sqlite_db.hpp"

#include <chrono>
#include <iterator>

#include <fmt/format.h>

#include "pool/errors.hpp"
#include "pool/sqlite_store.hpp"
#include "sqlite_schema.hpp"

namespace pool::detail {

namespace {

// Binds one `sql_value` to parameter `index`.
struct binder {
  sqlite3_stmt* stmt;
  int index;

  int operator()(std::nullptr_t) const {
    return sqlite3_bind_null(stmt, index);
  }

  int operator()(int64_t x) const {
    return sqlite3_bind_int64(stmt, index, x);
  }

  int operator()(const std::string& x) const {
    return sqlite3_bind_text64(stmt, index, x.data(), x.size(), SQLITE_STATIC,
                               SQLITE_UTF8);
  }

  int operator()(const std::vector<char>& x) const {
    if (x.empty())
      return sqlite3_bind_zeroblob(stmt, index, 0);
    return sqlite3_bind_blob64(stmt, index, x.data(), x.size(), SQLITE_STATIC);
  }
};

} // namespace

const char* advice(int rc) {
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return "free disk space (or raise sqlite_options::max_size)";
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return "check that the file's directory exists and that the file and "
             "its directory are writable";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "another connection holds the file's lock; raise "
             "sqlite_options::busy_timeout or stop the other program";
    case SQLITE_IOERR:
      return "the disk failed to read or write; check the device";
    case SQLITE_CORRUPT:
      return "the file is damaged: restore it from a backup or move it aside";
    case SQLITE_NOTADB:
      return "the file is not an SQLite database: give the store a file of "
             "its own";
    case SQLITE_NOMEM:
      return "the process is out of memory";
    default:
      return nullptr;
  }
}

std::string column_text(sqlite3_stmt* stmt, int col) {
  auto text = sqlite3_column_text(stmt, col);
  if (text == nullptr)
    return {};
  return std::string{reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt, col))};
}

sqlite_db::sqlite_db(std::string path) : path_(std::move(path)) {
  // nop
}

sqlite_db::~sqlite_db() {
  // An open transaction is discarded: closing rolls it back. The result
  // codes of finalize repeat errors already reported; close_v2 only fails
  // for a null or busy handle, which cannot be helped here.
  for (auto* stmt : statements_)
    static_cast<void>(sqlite3_finalize(stmt));
  if (db_ != nullptr)
    static_cast<void>(sqlite3_close_v2(db_));
}

caf::error sqlite_db::open(const sqlite_options& opts) {
  auto flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  auto vfs = opts.vfs().empty() ? nullptr : opts.vfs().c_str();
  if (auto rc = sqlite3_open_v2(path_.c_str(), &db_, flags, vfs);
      rc != SQLITE_OK)
    return fail(rc, "opening the file");
  if (auto rc = sqlite3_extended_result_codes(db_, 1); rc != SQLITE_OK)
    return fail(rc, "enabling extended result codes");
  auto busy_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      opts.busy_timeout());
  if (auto rc = sqlite3_busy_timeout(db_, static_cast<int>(busy_ms.count()));
      rc != SQLITE_OK)
    return fail(rc, "setting the busy timeout");
  return caf::none;
}

caf::error sqlite_db::fail(int rc, const std::string& what) const {
  std::string reason = sqlite3_errstr(rc);
  if (db_ != nullptr && sqlite3_errcode(db_) != SQLITE_OK) {
    std::string message = sqlite3_errmsg(db_);
    if (message != reason)
      reason = message + " [" + reason + "]";
  }
  auto detail = fmt::format("{}: {} (SQLite code {})", what, reason, rc);
  if (auto hint = advice(rc)) {
    detail += "; ";
    detail += hint;
  }
  auto code = pool_errc::store_failed;
  if ((rc & 0xff) == SQLITE_CORRUPT)
    code = pool_errc::store_corrupt;
  else if ((rc & 0xff) == SQLITE_NOTADB)
    code = pool_errc::store_incompatible;
  return caf::make_error(code, path_, std::move(detail));
}

caf::error sqlite_db::exec(const char* text, const std::string& what) {
  char* message = nullptr;
  auto rc = sqlite3_exec(db_, text, nullptr, nullptr, &message);
  // The message is also available through sqlite3_errmsg.
  sqlite3_free(message);
  if (rc != SQLITE_OK)
    return fail(rc, what);
  return caf::none;
}

caf::error sqlite_db::prepare_statements() {
  auto n = static_cast<size_t>(sql::count);
  statements_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto text = statement_text(static_cast<sql>(i));
    sqlite3_stmt* stmt = nullptr;
    if (auto rc = sqlite3_prepare_v3(db_, text, -1, SQLITE_PREPARE_PERSISTENT,
                                     &stmt, nullptr);
        rc != SQLITE_OK)
      return fail(rc, std::string{"preparing "} + text);
    statements_.push_back(stmt);
  }
  return caf::none;
}

caf::error sqlite_db::bind(sql s, const std::vector<sql_value>& args,
                           const std::string& what) {
  auto stmt = statement(s);
  for (size_t i = 0; i < args.size(); ++i) {
    auto rc = std::visit(binder{stmt, static_cast<int>(i + 1)}, args[i]);
    if (rc != SQLITE_OK) {
      // Always returns SQLITE_OK.
      static_cast<void>(sqlite3_clear_bindings(stmt));
      return fail(rc, what);
    }
  }
  return caf::none;
}

caf::error sqlite_db::run(sql s, const std::vector<sql_value>& args,
                          const std::string& what) {
  if (auto err = bind(s, args, what))
    return err;
  auto stmt = statement(s);
  int rc;
  do {
    rc = sqlite3_step(stmt);
  } while (rc == SQLITE_ROW);
  caf::error err;
  if (rc != SQLITE_DONE)
    err = fail(rc, what);
  reset(s);
  return err;
}

void sqlite_db::reset(sql s) noexcept {
  auto stmt = statement(s);
  // reset returns the step's error again, handled by the caller;
  // clear_bindings always returns SQLITE_OK.
  static_cast<void>(sqlite3_reset(stmt));
  static_cast<void>(sqlite3_clear_bindings(stmt));
}

} // namespace pool::detail
