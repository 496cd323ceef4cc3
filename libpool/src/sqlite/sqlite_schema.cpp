#include "sqlite_schema.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include <fmt/format.h>

#include "pool/errors.hpp"
#include "pool/sqlite_store.hpp"

namespace pool::detail {

namespace {

// Schema version 2 (1 without `options`). Times are wall-clock nanoseconds since the Unix epoch;
// `state` holds `operation_state` values.
constexpr const char* schema_sql = R"sql(
CREATE TABLE meta (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE operations (
  id INTEGER PRIMARY KEY,
  state INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  due INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  payload BLOB NOT NULL,
  result BLOB,
  error BLOB,
  key TEXT,
  finished INTEGER,
  options BLOB
);
CREATE INDEX operations_unfinished ON operations (state) WHERE state <= 1;
CREATE INDEX operations_key ON operations (key) WHERE key IS NOT NULL;
CREATE TABLE failures (
  operation INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  after_submit INTEGER NOT NULL,
  reason BLOB NOT NULL
);
CREATE INDEX failures_operation ON failures (operation);
)sql";

// Version 1 to 2: the options of each operation (`job_options`), NULL for
// the pool's.
constexpr const char* migrate_v2_sql = R"sql(
ALTER TABLE operations ADD COLUMN options BLOB;
UPDATE meta SET value = '2' WHERE name = 'schema_version';
PRAGMA user_version = 2;
)sql";

// For retention: created by the first store with retention that opens a
// file (it costs space in every file otherwise). Older builds ignore it.
constexpr const char* retention_index_sql =
    "CREATE INDEX IF NOT EXISTS operations_finished ON operations (finished) "
    "WHERE state >= 2";

// Indexed by `sql`. `state <= 1` in the queue query lets SQLite use the
// partial index.
constexpr const char* statement_sql[] = {
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
    "INSERT INTO operations (id, state, attempt, due, seq, payload, key, "
    "options) VALUES (?1, 0, ?2, ?3, ?4, ?5, ?6, ?7) "
    "ON CONFLICT (id) DO UPDATE SET state = 0, attempt = excluded.attempt, "
    "due = excluded.due, seq = excluded.seq, payload = excluded.payload, "
    "key = coalesce(excluded.key, key), result = NULL, error = NULL, "
    "finished = NULL, options = coalesce(excluded.options, options)",
    "UPDATE operations SET state = 1 WHERE id = ?1 AND state = 0",
    "UPDATE operations SET state = 4, finished = ?2 WHERE id = ?1 AND "
    "state <= 1",
    "UPDATE operations SET state = ?2, result = ?3, error = ?4, finished = ?5 "
    "WHERE id = ?1 AND state <= 1",
    "INSERT INTO failures (operation, attempt, after_submit, reason) "
    "VALUES (?1, ?2, ?3, ?4)",
    "UPDATE operations SET key = ?2 WHERE id = ?1",
    "SELECT id, state, attempt, due, seq, payload, key, options FROM "
    "operations WHERE state <= 1 AND state <= ?1",
    "SELECT state, attempt, payload, result, error, key, options FROM "
    "operations WHERE id = ?1",
    "SELECT attempt, after_submit, reason FROM failures WHERE operation = ?1 "
    "ORDER BY rowid",
    "SELECT id FROM operations WHERE key = ?1 AND (state <= 1 OR "
    "(state IN (2, 3) AND finished >= ?2)) ORDER BY state <= 1 DESC, id DESC "
    "LIMIT 1",
    "INSERT INTO meta (name, value) VALUES ('last_operation_id', ?1) "
    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    // The same oldest finished rows for both deletes (one transaction).
    // Cancelled rows of files written before cancels had a time have none.
    "DELETE FROM failures WHERE operation IN (SELECT id FROM operations "
    "WHERE state >= 2 AND (finished < ?1 OR finished IS NULL) "
    "ORDER BY finished, id LIMIT ?2)",
    "DELETE FROM operations WHERE id IN (SELECT id FROM operations "
    "WHERE state >= 2 AND (finished < ?1 OR finished IS NULL) "
    "ORDER BY finished, id LIMIT ?2)",
    // The dead set of a restarted pool: newest failures first.
    "SELECT id, payload, key, options, error, finished FROM operations "
    "WHERE state = 3 AND finished >= ?1 ORDER BY finished DESC, id DESC",
    "DELETE FROM failures WHERE operation = ?1 AND EXISTS (SELECT 1 FROM "
    "operations WHERE id = ?1 AND state = 3)",
    "DELETE FROM operations WHERE id = ?1 AND state = 3",
};

static_assert(std::size(statement_sql) == static_cast<size_t>(sql::count));

// Reads the first column of a row as integer into `out`.
auto read_int(int64_t& out) {
  return [&out](sqlite3_stmt* stmt) { out = sqlite3_column_int64(stmt, 0); };
}

} // namespace

caf::error check_compatible(sqlite_db& db, bool& fresh, int64_t& version) {
  int64_t app = 0;
  version = 0;
  int64_t objects = 0;
  if (auto rc = db.query_first("PRAGMA application_id", read_int(app));
      rc != SQLITE_OK)
    return db.fail(rc, "reading the file header");
  if (auto rc = db.query_first("PRAGMA user_version", read_int(version));
      rc != SQLITE_OK)
    return db.fail(rc, "reading the file header");
  if (auto rc = db.query_first("SELECT count(*) FROM sqlite_master",
                               read_int(objects));
      rc != SQLITE_OK)
    return db.fail(rc, "reading the schema");
  if (app == 0 && version == 0 && objects == 0) {
    fresh = true;
    return caf::none;
  }
  if (app != sqlite_store::application_id)
    return caf::make_error(
        pool_errc::store_incompatible, db.path(),
        fmt::format("another program's SQLite database (application_id {:#x}, "
                    "user_version {}, {} schema objects), not a pool store; "
                    "give the store a file of its own",
                    static_cast<uint32_t>(app), version, objects));
  if (version < 1 || version > sqlite_store::schema_version)
    return caf::make_error(
        pool_errc::store_incompatible, db.path(),
        fmt::format("a pool store of schema version {}; this build reads "
                    "versions 1 to {}: open it with a matching build",
                    version, sqlite_store::schema_version));
  return caf::none;
}

const char* statement_text(sql s) {
  return statement_sql[static_cast<size_t>(s)];
}

caf::error configure_file(sqlite_db& db, const sqlite_options& opts,
                          bool fresh) {
  if (sqlite3_db_readonly(db.get(), "main") == 1)
    return caf::make_error(pool_errc::store_failed, db.path(),
                           std::string{"the file is read-only: "} +
                               advice(SQLITE_READONLY));
  std::string mode;
  if (auto rc = db.query_first(
          "PRAGMA journal_mode = WAL",
          [&](sqlite3_stmt* stmt) { mode = column_text(stmt, 0); });
      rc != SQLITE_OK)
    return db.fail(rc, "switching to WAL journal mode");
  if (mode != "wal")
    return caf::make_error(pool_errc::store_failed, db.path(),
                           "cannot use WAL journal mode (SQLite chose '" +
                               mode +
                               "'); put the store on a local file system");
  auto sync = opts.synchronous() == sqlite_sync::full
                  ? "PRAGMA synchronous = FULL"
                  : "PRAGMA synchronous = NORMAL";
  if (auto err = db.exec(sync, "setting the synchronous level"))
    return err;
  if (opts.max_size() > 0) {
    int64_t page_size = 0;
    if (auto rc = db.query_first("PRAGMA page_size", read_int(page_size));
        rc != SQLITE_OK)
      return db.fail(rc, "reading the page size");
    auto pages = std::max<uint64_t>(1, opts.max_size() /
                                           std::max<int64_t>(page_size, 1));
    pages = std::min<uint64_t>(pages, UINT32_MAX - 1);
    auto text = "PRAGMA max_page_count = " + std::to_string(pages);
    if (auto err = db.exec(text.c_str(), "limiting the file size"))
      return err;
  }
  if (opts.verify_on_open() && !fresh) {
    std::string verdict;
    if (auto rc = db.query_first(
            "PRAGMA quick_check",
            [&](sqlite3_stmt* stmt) { verdict = column_text(stmt, 0); });
        rc != SQLITE_OK)
      return db.fail(rc, "checking the file's integrity");
    if (verdict != "ok")
      return caf::make_error(pool_errc::store_corrupt, db.path(),
                             "integrity check failed: " + verdict + "; " +
                                 advice(SQLITE_CORRUPT));
  }
  return caf::none;
}

caf::error create_schema(sqlite_db& db) {
  if (auto err = db.exec(schema_sql, "creating the schema"))
    return err;
  auto meta =
      fmt::format("INSERT INTO meta (name, value) VALUES "
                  "('application', '{}'), ('schema_version', '{}'); "
                  "PRAGMA application_id = {}; "
                  "PRAGMA user_version = {};",
                  sqlite_store::application, sqlite_store::schema_version,
                  sqlite_store::application_id, sqlite_store::schema_version);
  return db.exec(meta.c_str(), "writing the schema version");
}

caf::error check_meta(sqlite_db& db) {
  std::string app;
  std::string version;
  auto rc = db.query_first("SELECT (SELECT value FROM meta WHERE name = "
                           "'application'), (SELECT value FROM meta WHERE "
                           "name = 'schema_version')",
                           [&](sqlite3_stmt* stmt) {
                             app = column_text(stmt, 0);
                             version = column_text(stmt, 1);
                           });
  if ((rc & 0xff) == SQLITE_ERROR)
    return caf::make_error(pool_errc::store_incompatible, db.path(),
                           std::string{"the header says pool store but the "
                                       "meta table is missing: "} +
                               sqlite3_errmsg(db.get()));
  if (rc != SQLITE_OK)
    return db.fail(rc, "reading the meta table");
  if (app != sqlite_store::application ||
      version != std::to_string(sqlite_store::schema_version))
    return caf::make_error(
        pool_errc::store_incompatible, db.path(),
        fmt::format("the meta table names application '{}', schema version "
                    "'{}'; expected '{}', '{}'",
                    app, version, sqlite_store::application,
                    sqlite_store::schema_version));
  return caf::none;
}

caf::error migrate_schema(sqlite_db& db, int64_t version) {
  if (version >= 2)
    return caf::none;
  return db.exec(migrate_v2_sql, "migrating the schema to version 2");
}

caf::error add_retention_index(sqlite_db& db) {
  return db.exec(retention_index_sql, "adding the index for retention");
}

caf::error read_last_operation_id(sqlite_db& db, uint64_t& out) {
  int64_t max_id = 0;
  if (auto rc = db.query_first(
          "SELECT max(coalesce((SELECT max(id) FROM operations), 0), "
          "coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE name = "
          "'last_operation_id'), 0))",
          read_int(max_id));
      rc != SQLITE_OK)
    return db.fail(rc, "reading the highest operation id");
  out = static_cast<uint64_t>(std::max<int64_t>(max_id, 0));
  return caf::none;
}

} // namespace pool::detail
