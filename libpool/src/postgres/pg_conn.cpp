#include "pg_conn.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "pool/errors.hpp"

namespace pool::detail {

namespace {

// libpq prints notices (e.g. "relation already exists, skipping") to
// stderr by default.
void ignore_notice(void*, const char*) {
  // nop
}

// libpq's multi-line messages as one line.
std::string one_line(const char* text) {
  std::string result = text != nullptr ? text : "";
  for (auto& c : result)
    if (c == '\n' || c == '\t')
      c = ' ';
  while (!result.empty() && result.back() == ' ')
    result.pop_back();
  return result;
}

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

// What a user can do about a failed connection, from libpq's message.
std::string connect_advice(const std::string& message) {
  if (contains(message, "password authentication failed") ||
      contains(message, "no password supplied") ||
      contains(message, "SCRAM authentication"))
    return "authentication failed: check the user name and password (in the "
           "conninfo, PGPASSWORD or ~/.pgpass)";
  if (contains(message, "no pg_hba.conf entry"))
    return "the server refuses this client: check pg_hba.conf, the user, "
           "the database and sslmode";
  if (contains(message, "SSL") || contains(message, "certificate"))
    return "the TLS handshake failed: check sslmode, sslrootcert and the "
           "server's certificate";
  if (contains(message, "does not exist"))
    return "check the database and user names";
  if (contains(message, "Connection refused") ||
      contains(message, "timeout expired") ||
      contains(message, "could not translate host name") ||
      contains(message, "No such file or directory") ||
      contains(message, "Network is unreachable"))
    return "cannot reach the server: check host and port, and that the "
           "server runs and accepts TCP connections";
  return "check the conninfo and the server's log";
}

} // namespace

int64_t pg_int(const PGresult* res, int row, int col) {
  if (PQgetisnull(res, row, col) == 1)
    return 0;
  auto data = reinterpret_cast<const unsigned char*>(PQgetvalue(res, row, col));
  auto size = PQgetlength(res, row, col);
  uint64_t result = 0;
  for (int i = 0; i < size; ++i)
    result = (result << 8) | data[i];
  // Sign-extend the narrower types.
  if (size == 2)
    return static_cast<int16_t>(result);
  if (size == 4)
    return static_cast<int32_t>(result);
  return static_cast<int64_t>(result);
}

std::string pg_text(const PGresult* res, int row, int col) {
  if (PQgetisnull(res, row, col) == 1)
    return {};
  return std::string{PQgetvalue(res, row, col),
                     static_cast<size_t>(PQgetlength(res, row, col))};
}

std::string pg_sqlstate(const PGresult* res) {
  auto state =
      res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  return state != nullptr ? state : "";
}

caf::error check_conninfo(const std::string& conninfo) {
  char* message = nullptr;
  auto options = PQconninfoParse(conninfo.c_str(), &message);
  if (options == nullptr) {
    auto reason =
        message != nullptr ? one_line(message) : std::string{"out of memory"};
    PQfreemem(message);
    return caf::make_error(
        pool_errc::invalid_option, std::string{"postgres"},
        "the conninfo is not valid: " + reason +
            "; write a URI (postgres://user@host:port/dbname) or "
            "key=value pairs (host=... dbname=...)");
  }
  PQconninfoFree(options);
  return caf::none;
}

pg_conn::pg_conn(std::string conninfo, std::chrono::seconds connect_timeout)
    : conninfo_(std::move(conninfo)), connect_timeout_(connect_timeout) {
  // nop
}

pg_conn::~pg_conn() {
  if (conn_ != nullptr)
    PQfinish(conn_);
}

caf::error pg_conn::connect() {
  if (conn_ != nullptr) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  // Ours first: the conninfo's own values override them.
  auto timeout = std::to_string(std::max<int64_t>(1, connect_timeout_.count()));
  // A lock held by a stuck transaction elsewhere (a unique key, the
  // queue's claim lock) fails a statement after 10 s instead of blocking
  // the queue for good.
  // A server that vanished without closing the connection (a failover,
  // a cut network) is noticed by keepalives when idle, and by
  // tcp_user_timeout while a statement waits for its answer.
  const char* keys[] = {"connect_timeout",
                        "fallback_application_name",
                        "options",
                        "keepalives_idle",
                        "keepalives_interval",
                        "keepalives_count",
                        "tcp_user_timeout",
                        "dbname",
                        nullptr};
  const char* values[] = {timeout.c_str(),
                          "caf-pool",
                          "-c lock_timeout=10s",
                          "10",
                          "5",
                          "3",
                          "30000",
                          conninfo_.c_str(),
                          nullptr};
  conn_ = PQconnectdbParams(keys, values, 1);
  if (conn_ == nullptr)
    return caf::make_error(pool_errc::store_failed, std::string{"postgres"},
                           std::string{"out of memory"});
  auto show = [](const char* x) { return x != nullptr ? x : ""; };
  std::string host = show(PQhost(conn_));
  if (host.empty() || host.front() == '/')
    host = "[" + (host.empty() ? std::string{"local socket"} : host) + "]";
  target_ = fmt::format("postgres://{}@{}:{}/{}", show(PQuser(conn_)), host,
                        show(PQport(conn_)), show(PQdb(conn_)));
  if (PQstatus(conn_) != CONNECTION_OK) {
    auto message = one_line(PQerrorMessage(conn_));
    return caf::make_error(pool_errc::store_failed, target_,
                           fmt::format("cannot connect: {}; {}", message,
                                       connect_advice(message)));
  }
  PQsetNoticeProcessor(conn_, ignore_notice, nullptr);
  for (auto& step : setup_) {
    auto res = query(step.text, step.params, step.what);
    if (!res) {
      PQfinish(conn_);
      conn_ = nullptr;
      return std::move(res.error());
    }
  }
  ++connects_;
  return caf::none;
}

caf::error pg_conn::reconnect() {
  auto now = std::chrono::steady_clock::now();
  if (last_reconnect_error_ && now - last_failed_reconnect_ < reconnect_delay_)
    return last_reconnect_error_;
  last_try_ = now;
  auto err = connect();
  for (auto& [name, text] : prepared_) {
    if (err)
      break;
    pg_result res{PQprepare(conn_, name.c_str(), text.c_str(), 0, nullptr)};
    if (PQresultStatus(res.get()) != PGRES_COMMAND_OK)
      err = fail("preparing " + name, res.get());
  }
  if (err) {
    // Each failure doubles the wait before the next try, up to 2 s: an
    // unreachable host costs the caller a connect timeout per try.
    if (last_reconnect_error_)
      reconnect_delay_ = std::min(
          reconnect_delay_ * 2,
          std::chrono::steady_clock::duration{std::chrono::seconds(2)});
    last_failed_reconnect_ = now;
    last_reconnect_error_ = err;
    return err;
  }
  last_reconnect_error_ = caf::none;
  reconnect_delay_ = std::chrono::milliseconds(100);
  return caf::none;
}

caf::error pg_conn::fail(const std::string& what, const PGresult* res) const {
  std::string message;
  if (res != nullptr)
    message = one_line(PQresultErrorMessage(res));
  if (message.empty() && conn_ != nullptr)
    message = one_line(PQerrorMessage(conn_));
  if (message.empty())
    message = "unknown error";
  auto detail = fmt::format("{}: {}", what, message);
  auto state = pg_sqlstate(res);
  if (!ok())
    detail += "; lost the connection to the server: it is retried at the "
              "next change (check that the server runs)";
  else if (!state.empty())
    detail += " (SQLSTATE " + state + ")";
  return caf::make_error(pool_errc::store_failed, target_, std::move(detail));
}

caf::error pg_conn::exec(const char* text, const std::string& what) {
  pg_result res{PQexec(conn_, text)};
  auto status = PQresultStatus(res.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    return fail(what, res.get());
  return caf::none;
}

namespace {

// The libpq parameter arrays for `params`; `storage` keeps the texts.
struct pg_params {
  std::vector<std::string> storage;
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;

  explicit pg_params(const std::vector<db_value>& params) {
    storage.reserve(params.size());
    for (auto& x : params) {
      if (std::holds_alternative<std::nullptr_t>(x)) {
        storage.emplace_back();
        values.push_back(nullptr);
        lengths.push_back(0);
        formats.push_back(0);
      } else if (auto i = std::get_if<int64_t>(&x)) {
        storage.push_back(std::to_string(*i));
        values.push_back(storage.back().c_str());
        lengths.push_back(0);
        formats.push_back(0);
      } else if (auto s = std::get_if<std::string>(&x)) {
        storage.emplace_back();
        values.push_back(s->c_str());
        lengths.push_back(0);
        formats.push_back(0);
      } else {
        auto& bytes = std::get<std::vector<char>>(x);
        storage.emplace_back();
        values.push_back(bytes.data());
        lengths.push_back(static_cast<int>(bytes.size()));
        formats.push_back(1);
      }
    }
  }
};

} // namespace

caf::expected<pg_result> pg_conn::finish(PGresult* raw,
                                         const std::string& what) {
  pg_result res{raw};
  if (auto err = check(res.get(), what))
    return err;
  return res;
}

caf::expected<pg_result> pg_conn::query(const std::string& text,
                                        const std::vector<db_value>& params,
                                        const std::string& what) {
  pg_params p{params};
  return finish(PQexecParams(conn_, text.c_str(),
                             static_cast<int>(params.size()), nullptr,
                             p.values.data(), p.lengths.data(),
                             p.formats.data(), 1),
                what);
}

caf::error pg_conn::prepare(std::string name, std::string text) {
  pg_result res{PQprepare(conn_, name.c_str(), text.c_str(), 0, nullptr)};
  if (PQresultStatus(res.get()) != PGRES_COMMAND_OK)
    return fail("preparing " + name, res.get());
  prepared_.emplace_back(std::move(name), std::move(text));
  return caf::none;
}

pg_result pg_conn::run_raw(const std::string& name,
                           const std::vector<db_value>& params) {
  pg_params p{params};
  return pg_result{
      PQexecPrepared(conn_, name.c_str(), static_cast<int>(params.size()),
                     p.values.data(), p.lengths.data(), p.formats.data(), 1)};
}

caf::error pg_conn::check(const PGresult* res, const std::string& what) const {
  auto status = PQresultStatus(res);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    return fail(what, res);
  return caf::none;
}

caf::expected<pg_result> pg_conn::run(const std::string& name,
                                      const std::vector<db_value>& params,
                                      const std::string& what) {
  auto res = run_raw(name, params);
  if (auto err = check(res.get(), what))
    return err;
  return res;
}

bool pg_conn::in_transaction() const noexcept {
  if (conn_ == nullptr)
    return false;
  auto status = PQtransactionStatus(conn_);
  return status == PQTRANS_INTRANS || status == PQTRANS_INERROR ||
         status == PQTRANS_ACTIVE;
}

} // namespace pool::detail
