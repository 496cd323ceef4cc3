#include "pool/sqlite_store.hpp"

#include <algorithm>
#include <climits>
#include <exception>
#include <iterator>
#include <new>
#include <utility>

#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/sec.hpp>
#include <fmt/format.h>
#include <sqlite3.h>

#include "pool/errors.hpp"
#include "pool/memory_store.hpp"

namespace pool {

namespace {

// Schema version 1. Times are wall-clock nanoseconds since the Unix epoch;
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
  finished INTEGER
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

// Indexed by `sqlite_store::sql`. `state <= 1` in the queue query lets
// SQLite use the partial index.
constexpr const char* statement_sql[] = {
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
    "INSERT INTO operations (id, state, attempt, due, seq, payload, key) "
    "VALUES (?1, 0, ?2, ?3, ?4, ?5, ?6) "
    "ON CONFLICT (id) DO UPDATE SET state = 0, attempt = excluded.attempt, "
    "due = excluded.due, seq = excluded.seq, payload = excluded.payload, "
    "key = coalesce(excluded.key, key), result = NULL, error = NULL, "
    "finished = NULL",
    "UPDATE operations SET state = 1 WHERE id = ?1 AND state = 0",
    "UPDATE operations SET state = 4 WHERE id = ?1 AND state <= 1",
    "UPDATE operations SET state = ?2, result = ?3, error = ?4, finished = ?5 "
    "WHERE id = ?1 AND state <= 1",
    "INSERT INTO failures (operation, attempt, after_submit, reason) "
    "VALUES (?1, ?2, ?3, ?4)",
    "UPDATE operations SET key = ?2 WHERE id = ?1",
    "SELECT id, state, attempt, due, seq, payload, key FROM operations "
    "WHERE state <= 1 AND state <= ?1",
    "SELECT state, attempt, payload, result, error, key FROM operations "
    "WHERE id = ?1",
    "SELECT attempt, after_submit, reason FROM failures WHERE operation = ?1 "
    "ORDER BY rowid",
    "SELECT id FROM operations WHERE key = ?1 AND (state <= 1 OR "
    "(state IN (2, 3) AND finished >= ?2)) ORDER BY state <= 1 DESC, id DESC "
    "LIMIT 1",
};

// Owns a statement prepared for one use.
class statement {
public:
  statement() = default;

  statement(const statement&) = delete;

  statement& operator=(const statement&) = delete;

  ~statement() {
    // Returns the error of the last step, which the caller handled.
    static_cast<void>(sqlite3_finalize(ptr_));
  }

  sqlite3_stmt** out() noexcept {
    return &ptr_;
  }

  sqlite3_stmt* get() const noexcept {
    return ptr_;
  }

private:
  sqlite3_stmt* ptr_ = nullptr;
};

// Prepares `text`, steps it once and calls `row` with the statement if it
// produced a row. Returns SQLite's result code, SQLITE_OK on success.
template <class F>
int query_first(sqlite3* db, const char* text, F row) {
  statement stmt;
  auto rc = sqlite3_prepare_v2(db, text, -1, stmt.out(), nullptr);
  if (rc != SQLITE_OK)
    return rc;
  rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_ROW) {
    row(stmt.get());
    return SQLITE_OK;
  }
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

// What a user can do about an SQLite error, by primary result code.
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

// Serializes `x` with CAF's binary format into `buf`.
template <class T>
caf::error save(caf::actor_system& sys, const T& x, std::vector<char>& buf) {
  buf.clear();
  caf::binary_serializer sink{sys, buf};
  // Inspection takes a mutable reference; a serializer only reads.
  return sink(const_cast<T&>(x));
}

// Deserializes `x` from a column value; rejects trailing bytes.
template <class T>
caf::error load(caf::actor_system& sys, const void* data, int size, T& x) {
  if (data == nullptr || size <= 0)
    return caf::make_error(caf::sec::end_of_stream, "empty value");
  caf::binary_deserializer source{sys, static_cast<const char*>(data),
                                  static_cast<size_t>(size)};
  if (auto err = source(x))
    return err;
  if (source.remaining() != 0)
    return caf::make_error(caf::sec::runtime_error,
                           std::to_string(source.remaining()) +
                               " bytes after the value");
  return caf::none;
}

template <class T>
caf::error load_column(caf::actor_system& sys, sqlite3_stmt* stmt, int col,
                       T& x) {
  // Per SQLite's docs: first the pointer, then the size.
  auto data = sqlite3_column_blob(stmt, col);
  auto size = sqlite3_column_bytes(stmt, col);
  return load(sys, data, size, x);
}

std::string column_text(sqlite3_stmt* stmt, int col) {
  auto text = sqlite3_column_text(stmt, col);
  if (text == nullptr)
    return {};
  return std::string{reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt, col))};
}

// The detail text of a store error (its context is (path, detail)), or the
// whole error rendered.
std::string detail_of(const caf::error& err) {
  auto& context = err.context();
  if (err.category() == pool_error_category && context.size() == 2 &&
      context.match_element<std::string>(1))
    return context.get_as<std::string>(1);
  return describe(err);
}

int64_t as_int64(uint64_t x) noexcept {
  return static_cast<int64_t>(x);
}

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

// -- sqlite_sync and sqlite_options -------------------------------------------

std::string to_string(sqlite_sync x) {
  switch (x) {
    case sqlite_sync::full:
      return "full";
    case sqlite_sync::normal:
      return "normal";
  }
  return "sqlite_sync(" + std::to_string(static_cast<int>(x)) + ")";
}

caf::error sqlite_options::validate() const {
  if (busy_timeout_.count() < 0)
    return caf::make_error(pool_errc::invalid_option,
                           std::string{"busy_timeout"},
                           std::string{"must not be negative"});
  if (busy_timeout_ > std::chrono::milliseconds(INT_MAX))
    return caf::make_error(pool_errc::invalid_option,
                           std::string{"busy_timeout"},
                           std::string{"must be at most 2^31 - 1 ms"});
  if (synchronous_ != sqlite_sync::full && synchronous_ != sqlite_sync::normal)
    return caf::make_error(pool_errc::invalid_option,
                           std::string{"synchronous"},
                           std::string{"must be full or normal"});
  return caf::none;
}

// -- construction -------------------------------------------------------------

sqlite_store::sqlite_store(caf::actor_system& sys, std::string path)
    : sys_(sys), path_(std::move(path)) {
  // nop
}

sqlite_store::~sqlite_store() {
  // An uncommitted group is discarded: closing rolls it back. The result
  // codes of finalize repeat errors already reported; close_v2 only fails
  // for a null or busy handle, which cannot be helped here.
  for (auto* stmt : statements_)
    static_cast<void>(sqlite3_finalize(stmt));
  if (db_ != nullptr)
    static_cast<void>(sqlite3_close_v2(db_));
}

caf::expected<std::shared_ptr<sqlite_store>>
sqlite_store::open(caf::actor_system& sys, std::string path,
                   sqlite_options opts) {
  try {
    if (auto err = opts.validate())
      return err;
    std::shared_ptr<sqlite_store> result{new sqlite_store(sys, path)};
    if (auto err = result->init(opts))
      return err;
    return result;
  } catch (const std::exception& e) {
    return caf::make_error(pool_errc::store_failed, path,
                           std::string{"opening: "} + e.what());
  } catch (...) {
    return caf::make_error(pool_errc::store_failed, path,
                           std::string{"opening: unknown exception"});
  }
}

caf::error sqlite_store::init(const sqlite_options& opts) {
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  auto wall = std::chrono::system_clock::now().time_since_epoch();
  // The actor system's clock is the one queue actors pass as `now` (under
  // CAF's testing scheduler, a simulated one).
  auto steady = sys_.clock().now().time_since_epoch();
  wall_offset_ = duration_cast<nanoseconds>(wall).count() -
                 duration_cast<nanoseconds>(steady).count();
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
  // Look before writing anything: never touch another program's file.
  bool fresh = false;
  if (auto err = check_compatible(fresh))
    return err;
  if (sqlite3_db_readonly(db_, "main") == 1)
    return caf::make_error(pool_errc::store_failed, path_,
                           std::string{"the file is read-only: "} +
                               advice(SQLITE_READONLY));
  std::string mode;
  if (auto rc =
          query_first(db_, "PRAGMA journal_mode = WAL",
                      [&](sqlite3_stmt* stmt) { mode = column_text(stmt, 0); });
      rc != SQLITE_OK)
    return fail(rc, "switching to WAL journal mode");
  if (mode != "wal")
    return caf::make_error(pool_errc::store_failed, path_,
                           "cannot use WAL journal mode (SQLite chose '" +
                               mode +
                               "'); put the store on a local file system");
  auto sync = opts.synchronous() == sqlite_sync::full
                  ? "PRAGMA synchronous = FULL"
                  : "PRAGMA synchronous = NORMAL";
  if (auto err = exec(sync, "setting the synchronous level"))
    return err;
  if (opts.max_size() > 0) {
    int64_t page_size = 0;
    if (auto rc = query_first(db_, "PRAGMA page_size",
                              [&](sqlite3_stmt* stmt) {
                                page_size = sqlite3_column_int64(stmt, 0);
                              });
        rc != SQLITE_OK)
      return fail(rc, "reading the page size");
    auto pages = std::max<uint64_t>(1, opts.max_size() /
                                           std::max<int64_t>(page_size, 1));
    pages = std::min<uint64_t>(pages, UINT32_MAX - 1);
    auto text = "PRAGMA max_page_count = " + std::to_string(pages);
    if (auto err = exec(text.c_str(), "limiting the file size"))
      return err;
  }
  if (opts.verify_on_open() && !fresh) {
    std::string verdict;
    if (auto rc = query_first(
            db_, "PRAGMA quick_check",
            [&](sqlite3_stmt* stmt) { verdict = column_text(stmt, 0); });
        rc != SQLITE_OK)
      return fail(rc, "checking the file's integrity");
    if (verdict != "ok")
      return caf::make_error(pool_errc::store_corrupt, path_,
                             "integrity check failed: " + verdict + "; " +
                                 advice(SQLITE_CORRUPT));
  }
  // One transaction for the schema, the check of its meta data and the
  // recovery of running operations.
  if (auto err = exec("BEGIN IMMEDIATE", "starting a transaction"))
    return err;
  auto err = fresh ? create_schema() : check_meta();
  if (!err)
    err = prepare_statements();
  if (!err)
    err = load_queue(true);
  if (!err)
    // At-least-once: an attempt that was running when the previous process
    // stopped is handed out again.
    err = exec("UPDATE operations SET state = 0 WHERE state = 1",
               "making running operations due again");
  if (!err) {
    int64_t max_id = 0;
    int64_t max_seq = -1;
    if (auto rc = query_first(db_,
                              "SELECT coalesce(max(id), 0), "
                              "coalesce(max(seq), -1) FROM operations",
                              [&](sqlite3_stmt* stmt) {
                                max_id = sqlite3_column_int64(stmt, 0);
                                max_seq = sqlite3_column_int64(stmt, 1);
                              });
        rc != SQLITE_OK)
      err = fail(rc, "reading the highest operation id");
    last_id_ = static_cast<uint64_t>(std::max<int64_t>(max_id, 0));
    seq_ = std::max(seq_, static_cast<uint64_t>(max_seq + 1));
  }
  if (!err)
    err = exec("COMMIT", "committing the opening transaction");
  if (err) {
    if (sqlite3_get_autocommit(db_) == 0)
      // Failing to roll back changes nothing: the store does not open and
      // closing the connection rolls back as well.
      static_cast<void>(exec("ROLLBACK", "rolling back"));
    return err;
  }
  return caf::none;
}

caf::error sqlite_store::check_compatible(bool& fresh) {
  int64_t app = 0;
  int64_t version = 0;
  int64_t objects = 0;
  auto read_int = [](int64_t& out) {
    return [&out](sqlite3_stmt* stmt) { out = sqlite3_column_int64(stmt, 0); };
  };
  if (auto rc = query_first(db_, "PRAGMA application_id", read_int(app));
      rc != SQLITE_OK)
    return fail(rc, "reading the file header");
  if (auto rc = query_first(db_, "PRAGMA user_version", read_int(version));
      rc != SQLITE_OK)
    return fail(rc, "reading the file header");
  if (auto rc = query_first(db_, "SELECT count(*) FROM sqlite_master",
                            read_int(objects));
      rc != SQLITE_OK)
    return fail(rc, "reading the schema");
  if (app == 0 && version == 0 && objects == 0) {
    fresh = true;
    return caf::none;
  }
  if (app != application_id)
    return caf::make_error(
        pool_errc::store_incompatible, path_,
        fmt::format("another program's SQLite database (application_id {:#x}, "
                    "user_version {}, {} schema objects), not a pool store; "
                    "give the store a file of its own",
                    static_cast<uint32_t>(app), version, objects));
  if (version != schema_version)
    return caf::make_error(
        pool_errc::store_incompatible, path_,
        fmt::format("a pool store of schema version {}; this build reads "
                    "version {} only: open it with a matching build",
                    version, schema_version));
  return caf::none;
}

caf::error sqlite_store::create_schema() {
  if (auto err = exec(schema_sql, "creating the schema"))
    return err;
  auto meta =
      fmt::format("INSERT INTO meta (name, value) VALUES "
                  "('application', '{}'), ('schema_version', '{}'); "
                  "PRAGMA application_id = {}; "
                  "PRAGMA user_version = {};",
                  application, schema_version, application_id, schema_version);
  return exec(meta.c_str(), "writing the schema version");
}

caf::error sqlite_store::check_meta() {
  std::string app;
  std::string version;
  auto rc = query_first(db_,
                        "SELECT (SELECT value FROM meta WHERE name = "
                        "'application'), (SELECT value FROM meta WHERE name "
                        "= 'schema_version')",
                        [&](sqlite3_stmt* stmt) {
                          app = column_text(stmt, 0);
                          version = column_text(stmt, 1);
                        });
  if ((rc & 0xff) == SQLITE_ERROR)
    return caf::make_error(pool_errc::store_incompatible, path_,
                           std::string{"the header says pool store but the "
                                       "meta table is missing: "} +
                               sqlite3_errmsg(db_));
  if (rc != SQLITE_OK)
    return fail(rc, "reading the meta table");
  if (app != application || version != std::to_string(schema_version))
    return caf::make_error(
        pool_errc::store_incompatible, path_,
        fmt::format("the meta table names application '{}', schema version "
                    "'{}'; expected '{}', '{}'",
                    app, version, application, schema_version));
  return caf::none;
}

caf::error sqlite_store::prepare_statements() {
  static_assert(std::size(statement_sql) == static_cast<size_t>(sql::count));
  statements_.reserve(std::size(statement_sql));
  for (auto text : statement_sql) {
    sqlite3_stmt* stmt = nullptr;
    if (auto rc = sqlite3_prepare_v3(db_, text, -1, SQLITE_PREPARE_PERSISTENT,
                                     &stmt, nullptr);
        rc != SQLITE_OK)
      return fail(rc, std::string{"preparing "} + text);
    statements_.push_back(stmt);
  }
  return caf::none;
}

// -- SQLite helpers -----------------------------------------------------------

caf::error sqlite_store::fail(int rc, const std::string& what) const {
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

caf::error sqlite_store::exec(const char* text, const std::string& what) {
  char* message = nullptr;
  auto rc = sqlite3_exec(db_, text, nullptr, nullptr, &message);
  // The message is also available through sqlite3_errmsg.
  sqlite3_free(message);
  if (rc != SQLITE_OK)
    return fail(rc, what);
  return caf::none;
}

caf::error sqlite_store::bind(sql s, const std::vector<sql_value>& args,
                              const std::string& what) {
  auto stmt = statements_[static_cast<size_t>(s)];
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

caf::error sqlite_store::run(sql s, const std::vector<sql_value>& args,
                             const std::string& what) {
  if (auto err = bind(s, args, what))
    return err;
  auto stmt = statements_[static_cast<size_t>(s)];
  int rc;
  do {
    rc = sqlite3_step(stmt);
  } while (rc == SQLITE_ROW);
  caf::error err;
  if (rc != SQLITE_DONE)
    err = fail(rc, what);
  // reset returns the step's error again, handled above; clear_bindings
  // always returns SQLITE_OK.
  static_cast<void>(sqlite3_reset(stmt));
  static_cast<void>(sqlite3_clear_bindings(stmt));
  return err;
}

// -- group commit -------------------------------------------------------------

caf::error sqlite_store::write(change x, const std::string& what) {
  if (broken_)
    return broken_;
  auto keep = x.statement != sql::upsert;
  if (auto err = begin_group()) {
    if (keep) {
      changes_.push_back(std::move(x));
      replay_needed_ = true;
    }
    return err;
  }
  auto err = run(x.statement, x.args, what);
  if (keep)
    changes_.push_back(std::move(x));
  if (err)
    abort_group(err);
  return err;
}

caf::error sqlite_store::begin_group() {
  if (in_group_)
    return caf::none;
  if (auto err = run(sql::begin, {}, "starting a transaction"))
    return err;
  in_group_ = true;
  if (replay_needed_) {
    for (auto& x : changes_) {
      if (auto err = run(x.statement, x.args,
                         "writing the changes of a rolled-back transaction "
                         "again")) {
        rollback();
        return err;
      }
    }
    replay_needed_ = false;
  }
  return caf::none;
}

void sqlite_store::rollback() {
  if (sqlite3_get_autocommit(db_) == 0) {
    if (auto err = run(sql::rollback, {}, "rolling back")) {
      // The connection may still hold a transaction: writing on would mix
      // rolled-back and new changes. Only reopening helps.
      broken_ = std::move(err);
    }
  }
  in_group_ = false;
}

void sqlite_store::abort_group(const caf::error& cause) {
  // SQLite may have rolled back already (disk full, I/O error); either
  // way, nothing of the group is in the file now.
  rollback();
  dropped_.insert(dropped_.end(), group_pushes_.begin(), group_pushes_.end());
  group_pushes_.clear();
  if (!rollback_cause_)
    rollback_cause_ = cause;
  replay_needed_ = !changes_.empty();
  if (broken_)
    return;
  // The queue as the file has it, minus what the kept changes took out.
  if (auto err = load_queue(false))
    broken_ = std::move(err);
}

caf::error sqlite_store::commit() {
  try {
    if (broken_) {
      // Nothing since the last commit can be stored any more.
      lost_ = std::move(dropped_);
      dropped_.clear();
      lost_.insert(lost_.end(), group_pushes_.begin(), group_pushes_.end());
      group_pushes_.clear();
      return broken_;
    }
    caf::error err;
    if (replay_needed_ && !in_group_)
      err = begin_group();
    if (!err && in_group_) {
      err = run(sql::commit, {}, "committing");
      if (err) {
        abort_group(err);
      } else {
        in_group_ = false;
        changes_.clear();
        group_pushes_.clear();
      }
    }
    lost_ = std::move(dropped_);
    dropped_.clear();
    auto cause = std::move(rollback_cause_);
    rollback_cause_ = caf::none;
    if (err)
      return err;
    if (!lost_.empty())
      return caf::make_error(pool_errc::store_failed, path_,
                             fmt::format("{} pushes since the last commit "
                                         "were rolled back after {}",
                                         lost_.size(), detail_of(cause)));
    return caf::none;
  } catch (...) {
    return on_exception();
  }
}

void sqlite_store::discard() {
  try {
    rollback();
    changes_.clear();
    group_pushes_.clear();
    dropped_.clear();
    lost_.clear();
    pending_keys_.clear();
    replay_needed_ = false;
    rollback_cause_ = caf::none;
    if (!broken_)
      if (auto err = load_queue(false))
        broken_ = std::move(err);
  } catch (...) {
    static_cast<void>(on_exception());
  }
}

caf::error sqlite_store::on_exception() noexcept {
  try {
    std::string what = "unknown exception";
    try {
      throw;
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      // keep the default text
    }
    auto err = caf::make_error(pool_errc::store_failed, path_,
                               "unexpected exception: " + what);
    try {
      if (!broken_)
        abort_group(err);
    } catch (...) {
      broken_ = err;
    }
    return err;
  } catch (...) {
    // Out of memory while reporting out of memory.
    std::terminate();
  }
}

// -- the in-memory queue ------------------------------------------------------

int64_t sqlite_store::to_wall(time_point x) const noexcept {
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  return duration_cast<nanoseconds>(x.time_since_epoch()).count() +
         wall_offset_;
}

sqlite_store::time_point sqlite_store::from_wall(int64_t x) const noexcept {
  using std::chrono::duration_cast;
  return time_point{duration_cast<time_point::duration>(
      std::chrono::nanoseconds{x - wall_offset_})};
}

void sqlite_store::promote(time_point now) {
  while (!delayed_.empty() && delayed_.front().due <= now) {
    std::pop_heap(delayed_.begin(), delayed_.end(), later{});
    ready_.push_back(std::move(delayed_.back().record));
    delayed_.pop_back();
  }
}

size_t sqlite_store::drop(uint64_t operation) {
  auto i = queued_.find(operation);
  if (i == queued_.end())
    return 0;
  auto result = i->second;
  queued_.erase(i);
  detail::erase_operation(ready_, delayed_, operation, later{});
  return result;
}

void sqlite_store::enqueue(work_record x, time_point due, uint64_t seq,
                           time_point now) {
  // As in memory_store: promote first so that entries that fell due earlier
  // stay ahead of this one.
  promote(now);
  ++queued_[x.id.operation];
  if (due <= now) {
    ready_.push_back(std::move(x));
  } else {
    delayed_.push_back(delayed_entry{due, seq, std::move(x)});
    std::push_heap(delayed_.begin(), delayed_.end(), later{});
  }
}

caf::error sqlite_store::load_queue(bool at_open) {
  ready_.clear();
  delayed_.clear();
  queued_.clear();
  if (at_open)
    unfinished_.clear();
  auto what = std::string{"loading the queue"};
  if (auto err = bind(sql::select_queue, {int64_t{at_open ? 1 : 0}}, what))
    return err;
  auto stmt = statements_[static_cast<size_t>(sql::select_queue)];
  caf::error err;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    auto id = static_cast<uint64_t>(sqlite3_column_int64(stmt, 0));
    auto state = static_cast<operation_state>(sqlite3_column_int(stmt, 1));
    auto attempt = static_cast<uint32_t>(sqlite3_column_int64(stmt, 2));
    auto due = from_wall(sqlite3_column_int64(stmt, 3));
    auto seq = static_cast<uint64_t>(sqlite3_column_int64(stmt, 4));
    caf::message payload;
    if (auto load_err = load_column(sys_, stmt, 5, payload)) {
      err = caf::make_error(
          pool_errc::store_failed, path_,
          fmt::format("cannot read the payload of op#{}: {}; register its "
                      "types with the actor system (pool::configure, "
                      "add_message_type) before opening the store",
                      id, describe(load_err)));
      break;
    }
    work_record record{attempt_id{id, attempt}, payload};
    delayed_.push_back(delayed_entry{due, seq, std::move(record)});
    ++queued_[id];
    seq_ = std::max(seq_, seq + 1);
    if (at_open) {
      operation_record x;
      x.id = id;
      x.state = state;
      x.attempt = attempt;
      x.payload = std::move(payload);
      x.key = column_text(stmt, 6);
      x.due = due;
      unfinished_.push_back(std::move(x));
    }
  }
  if (!err && rc != SQLITE_DONE)
    err = fail(rc, what);
  static_cast<void>(sqlite3_reset(stmt));
  static_cast<void>(sqlite3_clear_bindings(stmt));
  if (err)
    return err;
  // Entries already due move to the ready FIFO at the first call that
  // knows the time, in (due, seq) order.
  std::make_heap(delayed_.begin(), delayed_.end(), later{});
  if (at_open)
    for (auto& x : unfinished_)
      if (auto history_err = load_history(x.id, x.history))
        return history_err;
  for (auto& x : changes_)
    if (x.leaves_queue != 0)
      drop(x.leaves_queue);
  return caf::none;
}

caf::error sqlite_store::load_history(uint64_t operation,
                                      std::vector<attempt_failure>& out) {
  auto what = fmt::format("reading the attempt history of op#{}", operation);
  if (auto err = bind(sql::select_history, {as_int64(operation)}, what))
    return err;
  auto stmt = statements_[static_cast<size_t>(sql::select_history)];
  caf::error err;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    attempt_failure x;
    x.attempt = static_cast<uint32_t>(sqlite3_column_int64(stmt, 0));
    x.after_submit = caf::timespan{sqlite3_column_int64(stmt, 1)};
    if (auto load_err = load_column(sys_, stmt, 2, x.reason)) {
      err = caf::make_error(pool_errc::store_failed, path_,
                            what + ": " + describe(load_err));
      break;
    }
    out.push_back(std::move(x));
  }
  if (!err && rc != SQLITE_DONE)
    err = fail(rc, what);
  static_cast<void>(sqlite3_reset(stmt));
  static_cast<void>(sqlite3_clear_bindings(stmt));
  return err;
}

// -- work_store ---------------------------------------------------------------

caf::error sqlite_store::push(work_record x, time_point due, time_point now) {
  try {
    if (broken_)
      return broken_;
    auto what = "storing " + to_string(x.id);
    std::vector<char> payload;
    if (auto err = save(sys_, x.payload, payload))
      return caf::make_error(pool_errc::store_failed, path_,
                             fmt::format("{}: cannot serialize the payload: "
                                         "{}; a durable pool needs payload "
                                         "types that CAF can serialize",
                                         what, describe(err)));
    auto operation = x.id.operation;
    auto key = pending_keys_.find(operation);
    sql_value key_value = nullptr;
    if (key != pending_keys_.end())
      key_value = key->second;
    // A due time in the past is stored as `now`: the order by (due, seq)
    // then equals the FIFO order of the in-memory queue.
    auto seq = seq_++;
    change c{sql::upsert,
             {as_int64(operation), int64_t{x.id.attempt},
              to_wall(std::max(due, now)), as_int64(seq), std::move(payload),
              std::move(key_value)},
             0};
    if (auto err = write(std::move(c), what))
      return err;
    if (key != pending_keys_.end())
      pending_keys_.erase(key);
    // One row per operation: a retry replaces the queued entry, if any.
    drop(operation);
    group_pushes_.push_back(x.id);
    last_id_ = std::max(last_id_, operation);
    enqueue(std::move(x), due, seq, now);
    return caf::none;
  } catch (...) {
    return on_exception();
  }
}

std::optional<work_record> sqlite_store::pop_due(time_point now) {
  try {
    if (broken_)
      return std::nullopt;
    promote(now);
    if (ready_.empty())
      return std::nullopt;
    auto result = std::move(ready_.front());
    ready_.pop_front();
    auto operation = result.id.operation;
    if (auto i = queued_.find(operation);
        i != queued_.end() && --i->second == 0)
      queued_.erase(i);
    // A failed write rolls the group back and is reported by commit(); the
    // mark is written again then. The entry is handed out either way.
    static_cast<void>(
        write(change{sql::mark_running, {as_int64(operation)}, operation},
              "marking " + to_string(result.id) + " running"));
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

std::optional<sqlite_store::time_point> sqlite_store::next_due(time_point now) {
  try {
    promote(now);
    if (delayed_.empty())
      return std::nullopt;
    return delayed_.front().due;
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

size_t sqlite_store::remove(uint64_t operation) {
  try {
    if (broken_)
      return 0;
    auto result = drop(operation);
    // A failed write is reported by commit(), which writes it again.
    static_cast<void>(
        write(change{sql::mark_cancelled, {as_int64(operation)}, operation},
              fmt::format("cancelling op#{}", operation)));
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return 0;
  }
}

size_t sqlite_store::available(time_point now) {
  try {
    promote(now);
    return ready_.size();
  } catch (...) {
    static_cast<void>(on_exception());
    return 0;
  }
}

size_t sqlite_store::delayed(time_point now) {
  try {
    promote(now);
    return delayed_.size();
  } catch (...) {
    static_cast<void>(on_exception());
    return 0;
  }
}

caf::error sqlite_store::set_key(uint64_t operation, std::string key) {
  try {
    if (broken_)
      return broken_;
    pending_keys_[operation] = key;
    auto err = write(change{sql::set_key, {as_int64(operation), key}, 0},
                     fmt::format("setting the key of op#{}", operation));
    // The operation has a row already: no push needs to carry the key.
    if (!err && sqlite3_changes(db_) > 0)
      pending_keys_.erase(operation);
    return err;
  } catch (...) {
    return on_exception();
  }
}

std::optional<uint64_t> sqlite_store::find_key(const std::string& key,
                                               time_point now,
                                               caf::timespan window) {
  try {
    if (broken_)
      return std::nullopt;
    // Bound without copying: the values must outlive the step.
    std::vector<sql_value> args{key, to_wall(now) - window.count()};
    if (bind(sql::find_key, args, "finding a key"))
      return std::nullopt;
    auto stmt = statements_[static_cast<size_t>(sql::find_key)];
    std::optional<uint64_t> result;
    // An error reads as "not found": the caller then runs the operation,
    // which at-least-once delivery allows.
    if (sqlite3_step(stmt) == SQLITE_ROW)
      result = static_cast<uint64_t>(sqlite3_column_int64(stmt, 0));
    static_cast<void>(sqlite3_reset(stmt));
    static_cast<void>(sqlite3_clear_bindings(stmt));
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

caf::error sqlite_store::note_failure(uint64_t operation,
                                      const attempt_failure& x) {
  try {
    if (broken_)
      return broken_;
    auto what =
        fmt::format("recording the failure of op#{}/{}", operation, x.attempt);
    std::vector<char> reason;
    if (auto err = save(sys_, x.reason, reason))
      return caf::make_error(
          pool_errc::store_failed, path_,
          what + ": cannot serialize the error: " + describe(err));
    return write(change{sql::add_failure,
                        {as_int64(operation), int64_t{x.attempt},
                         int64_t{x.after_submit.count()}, std::move(reason)},
                        0},
                 what);
  } catch (...) {
    return on_exception();
  }
}

caf::error sqlite_store::finish(uint64_t operation, const caf::message& result,
                                time_point now) {
  try {
    std::vector<char> blob;
    if (auto err = save(sys_, result, blob))
      return caf::make_error(pool_errc::store_failed, path_,
                             fmt::format("recording the result of op#{}: "
                                         "cannot serialize it: {}",
                                         operation, describe(err)));
    return finish_impl(operation, operation_state::done, std::move(blob),
                       nullptr, now);
  } catch (...) {
    return on_exception();
  }
}

caf::error sqlite_store::finish(uint64_t operation, const caf::error& failure,
                                time_point now) {
  try {
    std::vector<char> blob;
    if (auto err = save(sys_, failure, blob))
      return caf::make_error(pool_errc::store_failed, path_,
                             fmt::format("recording the failure of op#{}: "
                                         "cannot serialize it: {}",
                                         operation, describe(err)));
    return finish_impl(operation, operation_state::failed, nullptr,
                       std::move(blob), now);
  } catch (...) {
    return on_exception();
  }
}

caf::error sqlite_store::finish_impl(uint64_t operation, operation_state state,
                                     sql_value result, sql_value error,
                                     time_point now) {
  if (broken_)
    return broken_;
  drop(operation);
  return write(change{sql::finish,
                      {as_int64(operation), int64_t{static_cast<int>(state)},
                       std::move(result), std::move(error), to_wall(now)},
                      operation},
               fmt::format("recording the outcome of op#{}", operation));
}

std::optional<operation_record> sqlite_store::lookup(uint64_t operation) {
  try {
    if (broken_)
      return std::nullopt;
    return lookup_impl(operation);
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

std::optional<operation_record> sqlite_store::lookup_impl(uint64_t operation) {
  if (bind(sql::select_operation, {as_int64(operation)}, "looking up"))
    return std::nullopt;
  auto stmt = statements_[static_cast<size_t>(sql::select_operation)];
  std::optional<operation_record> result;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    operation_record x;
    x.id = operation;
    x.state = static_cast<operation_state>(sqlite3_column_int(stmt, 0));
    x.attempt = static_cast<uint32_t>(sqlite3_column_int64(stmt, 1));
    x.key = column_text(stmt, 5);
    auto ok = !load_column(sys_, stmt, 2, x.payload);
    if (ok && sqlite3_column_type(stmt, 3) != SQLITE_NULL)
      ok = !load_column(sys_, stmt, 3, x.result);
    if (ok && sqlite3_column_type(stmt, 4) != SQLITE_NULL)
      ok = !load_column(sys_, stmt, 4, x.error);
    if (ok)
      result = std::move(x);
  }
  static_cast<void>(sqlite3_reset(stmt));
  static_cast<void>(sqlite3_clear_bindings(stmt));
  if (result && load_history(operation, result->history))
    return std::nullopt;
  return result;
}

std::vector<operation_record> sqlite_store::unfinished() {
  try {
    return unfinished_;
  } catch (...) {
    static_cast<void>(on_exception());
    return {};
  }
}

uint64_t sqlite_store::last_operation_id() {
  return last_id_;
}

caf::expected<std::shared_ptr<work_store>> store_for(caf::actor_system& sys,
                                                     const pool_options& opts) {
  if (!opts.durable_path())
    return std::shared_ptr<work_store>{std::make_shared<memory_store>()};
  auto store =
      sqlite_store::open(sys, *opts.durable_path(),
                         sqlite_options{}.synchronous(opts.durability()));
  if (!store)
    return std::move(store.error());
  return std::shared_ptr<work_store>{std::move(*store)};
}

} // namespace pool
