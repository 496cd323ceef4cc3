#pragma once

// Private to `pg_store`: one libpq connection, its prepared statements and
// the translation of libpq's failures into pool errors that name the
// server (never the password) and say what to do.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <libpq-fe.h>

#include "store_codec.hpp"

namespace pool::detail {

/// Owns a `PGresult`.
struct pg_result_deleter {
  void operator()(PGresult* x) const noexcept {
    PQclear(x);
  }
};

using pg_result = std::unique_ptr<PGresult, pg_result_deleter>;

/// Column `col` of row `row` of a binary-format result as integer (int2,
/// int4 or int8); 0 for NULL.
int64_t pg_int(const PGresult* res, int row, int col);

/// Column `col` of row `row` as raw bytes (text or bytea); empty for NULL.
std::string pg_text(const PGresult* res, int row, int col);

/// Whether column `col` of row `row` is NULL.
inline bool pg_null(const PGresult* res, int row, int col) {
  return PQgetisnull(res, row, col) == 1;
}

/// The SQLSTATE of a failed result ("23505", ...); empty if none.
std::string pg_sqlstate(const PGresult* res);

/// Checks the syntax of `conninfo` (a `postgres://` URI or `key=value`
/// pairs); `invalid_option` naming the field `postgres` and libpq's reason
/// on error.
caf::error check_conninfo(const std::string& conninfo);

/// One connection. Statements run in binary result format; integers and
/// text go as text parameters, bytes as binary ones.
class pg_conn {
public:
  /// `conninfo` must have passed `check_conninfo`.
  pg_conn(std::string conninfo, std::chrono::seconds connect_timeout);

  ~pg_conn();

  pg_conn(const pg_conn&) = delete;

  pg_conn& operator=(const pg_conn&) = delete;

  /// A statement run after each successful connect, before anything else
  /// (a session lock, a lease renewal); its failure fails the connect.
  struct setup_step {
    std::string text;
    std::vector<db_value> params;
    std::string what;
  };

  /// Sets what runs after each connect (`connect` and `reconnect`).
  void set_setup(std::vector<setup_step> steps) {
    setup_ = std::move(steps);
  }

  /// Connects; on failure, an error naming the server and the cause
  /// (unreachable, authentication, TLS, no such database, ...). A dead
  /// peer is noticed within about half a minute (TCP keepalives and
  /// `tcp_user_timeout`, unless the conninfo sets them).
  caf::error connect();

  /// Reconnects after a lost connection and prepares the statements
  /// again. After a failed attempt it fails at once, with that failure,
  /// for 100 ms (doubling with each further failure, up to 2 s), so that
  /// an unreachable server does not block every call for the connect
  /// timeout, and a server that is back is found within 2 s.
  caf::error reconnect();

  /// When `reconnect` last tried to reach the server (not counting the
  /// calls that failed at once, within the wait after a failure).
  std::chrono::steady_clock::time_point last_try() const noexcept {
    return last_try_;
  }

  /// How many times the connection was made (the first connect
  /// included): a change says that it was made again.
  uint64_t connects() const noexcept {
    return connects_;
  }

  /// Whether the connection is up.
  bool ok() const noexcept {
    return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK;
  }

  PGconn* get() const noexcept {
    return conn_;
  }

  /// The server as `postgres://user@host:port/dbname`, for messages.
  const std::string& target() const noexcept {
    return target_;
  }

  /// Runs `text` (one or several statements, no parameters).
  caf::error exec(const char* text, const std::string& what);

  /// Runs `text` with `params`; returns its rows.
  caf::expected<pg_result> query(const std::string& text,
                                 const std::vector<db_value>& params,
                                 const std::string& what);

  /// Prepares `text` as statement `name`, now and after each reconnect.
  caf::error prepare(std::string name, std::string text);

  /// Runs prepared statement `name` with `params`; returns its rows.
  caf::expected<pg_result> run(const std::string& name,
                               const std::vector<db_value>& params,
                               const std::string& what);

  /// Runs prepared statement `name` with `params`; returns libpq's result
  /// unchecked (`check` turns a failure into an error).
  pg_result run_raw(const std::string& name,
                    const std::vector<db_value>& params);

  /// None when `res` succeeded, else the error of `fail(what, res)`.
  caf::error check(const PGresult* res, const std::string& what) const;

  /// Whether a transaction is open (also when it failed and waits for its
  /// ROLLBACK).
  bool in_transaction() const noexcept;

  /// An error of the pool category for the failed step `what`: the
  /// server's message and, for a lost connection, what to do.
  caf::error fail(const std::string& what, const PGresult* res) const;

private:
  caf::expected<pg_result> finish(PGresult* raw, const std::string& what);

  std::string conninfo_;
  std::chrono::seconds connect_timeout_;
  PGconn* conn_ = nullptr;
  std::string target_;
  std::vector<std::pair<std::string, std::string>> prepared_;
  std::vector<setup_step> setup_;
  uint64_t connects_ = 0;
  std::chrono::steady_clock::time_point last_failed_reconnect_;
  caf::error last_reconnect_error_;
  std::chrono::steady_clock::time_point last_try_;
  std::chrono::steady_clock::duration reconnect_delay_ =
      std::chrono::milliseconds(100);
};

} // namespace pool::detail
