#pragma once

// Test helper: a job's own connection to the test server (a worker's
// resource), for writing each job's start and end into the table `runs`
// (key, phase, at = clock_timestamp()) that a test creates, so that the
// database's own record shows how many of a key ran at once.

#include <memory>
#include <stdexcept>
#include <string>

#include <libpq-fe.h>

namespace pool::test {

struct runs_db {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn{nullptr, &PQfinish};

  /// Connects to `conninfo`; throws on failure.
  static runs_db connect(const std::string& conninfo) {
    runs_db db;
    db.conn.reset(PQconnectdb(conninfo.c_str()));
    if (PQstatus(db.conn.get()) != CONNECTION_OK)
      throw std::runtime_error(PQerrorMessage(db.conn.get()));
    return db;
  }

  void note(const std::string& key, const char* phase) {
    const char* values[] = {key.c_str(), phase};
    auto res = PQexecParams(conn.get(),
                            "INSERT INTO runs (key, phase) VALUES ($1, $2)",
                            2, nullptr, values, nullptr, nullptr, 0);
    auto ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (!ok)
      throw std::runtime_error(PQerrorMessage(conn.get()));
  }
};

} // namespace pool::test
