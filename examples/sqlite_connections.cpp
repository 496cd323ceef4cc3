// SQLite connections: a connection-limited pool where each of three workers
// owns one database connection; 50 inserts share the three connections.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <sqlite3.h>

#include <caf/all.hpp>
#include <pool/all.hpp>

using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
  }
};

// Open connections now, and the most ever open at once.
std::atomic<int> live_connections{0};
std::atomic<int> peak_connections{0};

// One SQLite connection (RAII). Movable, because the pool moves the
// resource that `make()` returns into the worker.
class connection {
public:
  explicit connection(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
      std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error("cannot open " + path + ": " + why);
    }
    auto now = ++live_connections;
    auto peak = peak_connections.load();
    while (now > peak && !peak_connections.compare_exchange_weak(peak, now)) {
    }
    // Wait up to 5 s for a lock held by another connection instead of
    // failing at once; WAL lets readers work while one connection writes.
    sqlite3_busy_timeout(db_, 5000);
    exec("PRAGMA journal_mode=WAL");
  }

  connection(connection&& other) noexcept
      : db_(std::exchange(other.db_, nullptr)) {}

  connection& operator=(connection&&) = delete;

  ~connection() {
    if (db_) {
      sqlite3_close(db_);
      --live_connections;
    }
  }

  void exec(const std::string& sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
      std::string why = msg ? msg : sqlite3_errmsg(db_);
      sqlite3_free(msg);
      fail(sqlite3_errcode(db_), sql + ": " + why);
    }
  }

  // Inserts one order and returns its row id.
  int64_t insert_order(int order) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, "INSERT INTO orders(item) VALUES (?)", -1, &raw,
                           nullptr) != SQLITE_OK)
      fail(sqlite3_errcode(db_), sqlite3_errmsg(db_));
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> stmt{
        raw, sqlite3_finalize};
    sqlite3_bind_int(raw, 1, order);
    if (sqlite3_step(raw) != SQLITE_DONE)
      fail(sqlite3_errcode(db_), sqlite3_errmsg(db_));
    return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
  }

  int64_t count_orders() {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT count(*) FROM orders", -1, &raw,
                           nullptr) != SQLITE_OK)
      fail(sqlite3_errcode(db_), sqlite3_errmsg(db_));
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> stmt{
        raw, sqlite3_finalize};
    if (sqlite3_step(raw) != SQLITE_ROW)
      fail(sqlite3_errcode(db_), sqlite3_errmsg(db_));
    return sqlite3_column_int64(raw, 0);
  }

private:
  // A damaged database or an I/O error means the connection is unusable:
  // `pool::resource_broken` makes the pool replace the worker and its
  // connection. Anything else (e.g. SQLITE_BUSY) just fails the attempt.
  [[noreturn]] static void fail(int code, const std::string& why) {
    auto primary = code & 0xFF;
    if (primary == SQLITE_IOERR || primary == SQLITE_CORRUPT ||
        primary == SQLITE_NOTADB || primary == SQLITE_CANTOPEN)
      throw pool::resource_broken(why);
    throw std::runtime_error(why);
  }

  sqlite3* db_ = nullptr;
};

// A directory of our own under the system's temp dir, removed with all its
// files on scope exit; `path` is empty if it could not be created.
struct temp_dir {
  fs::path path;

  temp_dir() {
    std::error_code ec;
    auto pattern =
        (fs::temp_directory_path(ec) / "pool-sqlite-XXXXXX").string();
    if (!ec && mkdtemp(pattern.data()))
      path = pattern;
  }

  ~temp_dir() {
    std::error_code ec;
    if (!path.empty())
      fs::remove_all(path, ec);
  }
};

void caf_main(caf::actor_system& sys, const config&) {
  temp_dir dir;
  if (dir.path.empty()) {
    std::cerr << "cannot create a temp dir\n";
    return;
  }
  auto db_path = (dir.path / "orders.db").string();
  try {
    connection setup{db_path};
    setup.exec("CREATE TABLE orders(id INTEGER PRIMARY KEY, item INTEGER)");
  } catch (std::exception& ex) {
    std::cerr << "cannot create the database: " << ex.what() << '\n';
    return;
  }
  // Each worker opens its connection when it starts and closes it when it
  // stops: 3 workers = at most 3 connections. SQLite calls block, so the
  // workers are dedicated (a thread each), and a busy database may fail an
  // attempt, so allow a retry.
  auto make = [db_path] { return connection{db_path}; };
  auto insert = [](connection& db, int order) {
    return db.insert_order(order);
  };
  auto opts = pool::pool_options{}
                  .workers(3)
                  .kind(pool::worker_kind::dedicated)
                  .max_attempts(3)
                  .name("orders");
  auto pool = pool::spawn_resource_pool(sys, make, insert, opts);
  if (!pool) {
    std::cerr << "cannot start pool: " << pool::describe(pool.error()) << '\n';
    return;
  }
  // Submit 50 inserts from plain code and wait for their row ids.
  std::vector<std::future<caf::expected<int64_t>>> inserts;
  for (int order = 1; order <= 50; ++order)
    inserts.push_back(pool::submit_future<int64_t>(sys, *pool, order));
  int64_t last_id = 0;
  size_t inserted = 0;
  for (auto& f : inserts) {
    auto id = f.get();
    if (!id) {
      std::cerr << "insert failed: " << pool::describe(id.error()) << '\n';
      continue;
    }
    ++inserted;
    last_id = std::max(last_id, *id);
  }
  std::cout << "inserted " << inserted << " rows, highest row id " << last_id
            << '\n';
  // Drain the pool (it stops when done), then wait until every actor,
  // including the workers and their connections, is gone.
  {
    caf::scoped_actor self{sys};
    self->request(*pool, 10s, pool::drain_atom_v)
        .receive([] {},
                 [&](caf::error& err) {
                   std::cerr << "drain failed: " << pool::describe(err) << '\n';
                   self->send_exit(*pool, caf::exit_reason::user_shutdown);
                 });
  }
  sys.await_all_actors_done();
  std::cout << "connections open at most: " << peak_connections
            << ", open after drain: " << live_connections << '\n';
  // Count the rows through a connection of our own.
  try {
    connection reader{db_path};
    std::cout << "rows counted through a separate connection: "
              << reader.count_orders() << '\n';
  } catch (std::exception& ex) {
    std::cerr << "cannot count rows: " << ex.what() << '\n';
  }
}

CAF_MAIN()
