#pragma once

// Test helpers for store files: a temporary directory removed afterwards,
// and a raw SQLite connection for looking at or tampering with a file.

#include <cstdint>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>
#include <sqlite3.h>
#include <stdlib.h>

namespace pool::test {

/// A fresh directory under /tmp, removed (with everything in it, whatever
/// its permissions) when this object goes.
struct temp_dir {
  std::string path;

  temp_dir() {
    char name[] = "/tmp/pool-test-XXXXXX";
    auto made = mkdtemp(name);
    REQUIRE(made != nullptr);
    path = made;
  }

  ~temp_dir() {
    std::error_code ec;
    for (auto& x : std::filesystem::recursive_directory_iterator(path, ec))
      if (x.is_directory())
        std::filesystem::permissions(x.path(), std::filesystem::perms::all, ec);
    std::filesystem::remove_all(path, ec);
  }

  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

/// A raw connection to an SQLite file.
class connection {
public:
  explicit connection(const std::string& path) {
    auto rc =
        sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    REQUIRE_MESSAGE(rc == SQLITE_OK, sqlite3_errstr(rc));
  }

  ~connection() {
    sqlite3_close(db_);
  }

  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  void exec(const char* sql) {
    auto rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    REQUIRE_MESSAGE(rc == SQLITE_OK, sqlite3_errmsg(db_));
  }

  /// The first column of the first row of `sql`; -1 when there is none.
  int64_t query(const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    auto rc = sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr);
    REQUIRE_MESSAGE(rc == SQLITE_OK, sqlite3_errmsg(db_));
    rc = sqlite3_step(stmt);
    CHECK_MESSAGE(rc == SQLITE_ROW, sqlite3_errmsg(db_));
    auto result = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
    sqlite3_finalize(stmt);
    return result;
  }

private:
  sqlite3* db_ = nullptr;
};

} // namespace pool::test
