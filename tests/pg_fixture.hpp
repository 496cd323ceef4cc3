#pragma once

// A private PostgreSQL 15 cluster for one test: initdb (once, into a
// template under /tmp that later tests copy), then `postgres` on a free
// port on 127.0.0.1 with its unix socket in a temporary directory, as the
// unprivileged user `nobody` when the tests run as root (the server
// refuses root). Stopped and removed at the end of the test; a watchdog
// process does it should the test process die first. Without the server
// binaries, the test fails and says how to install them.

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pool::test {

/// Where the server binaries are: $POOL_PG_BIN or Debian's PostgreSQL 15.
inline std::string pg_bin() {
  if (auto dir = std::getenv("POOL_PG_BIN"))
    return dir;
  return "/usr/lib/postgresql/15/bin";
}

/// The account that runs the server: nobody when we are root, else us.
struct pg_account {
  uid_t uid = ::geteuid();
  gid_t gid = ::getegid();
  bool switch_user = false;

  pg_account() {
    if (::geteuid() != 0)
      return;
    auto pw = ::getpwnam("nobody");
    REQUIRE_MESSAGE(pw != nullptr, "running as root, the PostgreSQL tests "
                                   "need the user 'nobody' to run the server");
    uid = pw->pw_uid;
    gid = pw->pw_gid;
    switch_user = true;
  }

  /// In a child process: become the account (before exec).
  void become() const {
    if (!switch_user)
      return;
    if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 ||
        ::setuid(uid) != 0)
      _exit(125);
  }

  /// Gives `path` and everything below it to the account.
  void own(const std::string& path) const {
    if (!switch_user)
      return;
    REQUIRE(::lchown(path.c_str(), uid, gid) == 0);
    for (auto& x : std::filesystem::recursive_directory_iterator(path))
      REQUIRE(::lchown(x.path().c_str(), uid, gid) == 0);
  }
};

/// Runs `argv` as `account`, output to `log`; returns its exit status, or
/// -1 when it ran longer than `timeout` (then it is killed).
inline int pg_run(const pg_account& account,
                  const std::vector<std::string>& argv, const std::string& log,
                  std::chrono::seconds timeout = std::chrono::seconds(120)) {
  // Everything the child needs is made before the fork: afterwards it only
  // makes system calls (other threads may hold the allocator's lock).
  std::vector<char*> args;
  for (auto& x : argv)
    args.push_back(const_cast<char*>(x.c_str()));
  args.push_back(nullptr);
  auto pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    account.become();
    ::execv(args[0], args.data());
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // a child
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline std::string read_all(const std::string& path) {
  std::ifstream in{path};
  return std::string{std::istreambuf_iterator<char>{in}, {}};
}

/// The template cluster, made once per machine (under a lock, as tests run
/// in parallel) by initdb: copying it is much faster than initdb.
inline std::string pg_template(const pg_account& account) {
  auto initdb = pg_bin() + "/initdb";
  REQUIRE_MESSAGE(::access(initdb.c_str(), X_OK) == 0,
                  "PostgreSQL 15 server binaries not found (no "
                      << initdb
                      << "): run scripts/install-deps (Debian package "
                         "postgresql) or set POOL_PG_BIN");
  auto path = "/tmp/pool-pg15-template-v2-" + std::to_string(account.uid);
  auto lock =
      ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(lock >= 0);
  REQUIRE(::flock(lock, LOCK_EX) == 0);
  if (!std::filesystem::exists(path + "/PG_VERSION")) {
    char name[] = "/tmp/pool-pg-initdb-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    std::string staging = name;
    account.own(staging);
    auto log = staging + "/initdb.log";
    auto rc = pg_run(account,
                     {initdb, "-D", staging + "/data", "-U", "postgres", "-A",
                      "trust", "-E", "UTF8", "--no-sync", "--no-instructions",
                      // 1 MB WAL segments: less to copy per test.
                      "--wal-segsize=1"},
                     log);
    auto output = read_all(log);
    REQUIRE_MESSAGE(rc == 0, "initdb failed: " << output);
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    std::filesystem::rename(staging + "/data", path);
    std::filesystem::remove_all(staging, ec);
  }
  ::close(lock);
  return path;
}

/// A free TCP port on 127.0.0.1 (free when asked).
inline int pg_free_port() {
  auto fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// Tag of `pg_cluster`'s standby constructor.
struct standby_of {};

/// One running cluster. `tls` turns on TLS with certificates made here
/// (`ca_file()`), and password (SCRAM) authentication for TCP clients,
/// which must then use TLS.
class pg_cluster {
public:
  /// A streaming standby of `primary` (pg_basebackup over its socket):
  /// the same port number, on a unix socket of its own only (no TCP), so
  /// that a conninfo naming a socket directory through a link reaches
  /// whichever of the two the link points to. `promote` makes it take
  /// writes.
  pg_cluster(standby_of, const pg_cluster& primary) : tls_(false) {
    char name[] = "/tmp/pool-pg-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    dir = name;
    start_watchdog();
    port = primary.port;
    account_.own(dir);
    auto log = dir + "/basebackup.log";
    auto rc = pg_run(account_,
                     {pg_bin() + "/pg_basebackup", "-D", dir + "/data", "-h",
                      primary.dir, "-p", std::to_string(port), "-U",
                      "postgres", "-R", "-X", "stream", "--no-sync"},
                     log);
    REQUIRE_MESSAGE(rc == 0, "pg_basebackup failed: " << read_all(log));
    std::ofstream conf{dir + "/data/postgresql.conf", std::ios::app};
    conf << "listen_addresses = ''\nunix_socket_directories = '" << dir
         << "'\n";
    conf.close();
    account_.own(dir);
    start_server();
  }

  /// Promotes a standby: it takes writes from now on.
  void promote() {
    sql("SELECT pg_promote(true, 60)");
  }

  explicit pg_cluster(bool tls = false) : tls_(tls) {
    auto tmpl = pg_template(account_);
    char name[] = "/tmp/pool-pg-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    dir = name;
    start_watchdog();
    std::filesystem::copy(tmpl, dir + "/data",
                          std::filesystem::copy_options::recursive);
    std::filesystem::permissions(dir + "/data",
                                 std::filesystem::perms::owner_all);
    port = pg_free_port();
    std::ofstream conf{dir + "/data/postgresql.conf", std::ios::app};
    conf << "port = " << port << "\nlisten_addresses = '127.0.0.1'\n"
         << "unix_socket_directories = '" << dir << "'\n"
         << "fsync = off\nfull_page_writes = off\n"
         << "max_connections = 40\nshared_buffers = 16MB\n"
         << "min_wal_size = 2MB\nmax_wal_size = 32MB\n"
         << "password_encryption = 'scram-sha-256'\n";
    std::ofstream hba{dir + "/data/pg_hba.conf", std::ios::trunc};
    hba << "local all all trust\nlocal replication all trust\n";
    if (tls_) {
      make_certificates();
      conf << "ssl = on\nssl_cert_file = '" << dir << "/server.crt'\n"
           << "ssl_key_file = '" << dir << "/server.key'\n";
      hba << "hostssl all all 127.0.0.1/32 scram-sha-256\n";
    } else {
      hba << "host all all 127.0.0.1/32 trust\n";
    }
    conf.close();
    hba.close();
    account_.own(dir);
    start_server();
  }

  ~pg_cluster() {
    stop_server();
    // The watchdog removes the directory once our end of its pipe closes.
    ::close(watchdog_pipe_);
    int status = 0;
    ::waitpid(watchdog_, &status, 0);
  }

  pg_cluster(const pg_cluster&) = delete;
  pg_cluster& operator=(const pg_cluster&) = delete;

  /// Stops the server (fast shutdown: connections are cut) for `pause`,
  /// then starts it again on the same port.
  void restart(std::chrono::milliseconds pause) {
    stop_server();
    std::this_thread::sleep_for(pause); // the outage under test
    start_server();
  }

  /// Stops the server (fast shutdown); `start` starts it again.
  void stop() {
    stop_server();
  }

  /// Kills the server and every backend at once with SIGKILL, as a crash
  /// would; `start` starts it again (crash recovery).
  void kill_server() {
    if (server_ <= 0)
      return;
    ::kill(-server_, SIGKILL); // its process group (started with setsid)
    int status = 0;
    ::waitpid(server_, &status, 0);
    server_ = 0;
    // The backends die with it (zombies, maybe never reaped here); wait
    // until none of them runs, so that none holds the shared memory.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (group_runs(server_pgid_) &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10)); // polling
  }

  /// Starts the server after `stop` or `kill_server`.
  void start() {
    start_server();
  }

  /// A conninfo over TCP to 127.0.0.1 for `user` and `dbname`.
  std::string conninfo(const std::string& dbname = "postgres",
                       const std::string& user = "postgres") const {
    return "host=127.0.0.1 port=" + std::to_string(port) + " dbname=" + dbname +
           " user=" + user;
  }

  /// A conninfo over the unix socket, as the superuser.
  std::string admin_conninfo(const std::string& dbname = "postgres") const {
    return "host=" + dir + " port=" + std::to_string(port) +
           " dbname=" + dbname + " user=postgres";
  }

  /// The CA certificate that signed the server's (with `tls`).
  std::string ca_file() const {
    return dir + "/ca.crt";
  }

  /// Runs `sql` as the superuser; fails the test on an error.
  void sql(const std::string& text, const std::string& dbname = "postgres") {
    auto conn = PQconnectdb(admin_conninfo(dbname).c_str());
    REQUIRE_MESSAGE(PQstatus(conn) == CONNECTION_OK, PQerrorMessage(conn));
    auto res = PQexec(conn, text.c_str());
    auto status = PQresultStatus(res);
    auto ok = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
    std::string message = PQresultErrorMessage(res);
    PQclear(res);
    PQfinish(conn);
    REQUIRE_MESSAGE(ok, text << ": " << message);
  }

  /// The first column of the first row of `sql`, as text; "" for none.
  std::string query(const std::string& text,
                    const std::string& dbname = "postgres") {
    auto conn = PQconnectdb(admin_conninfo(dbname).c_str());
    REQUIRE_MESSAGE(PQstatus(conn) == CONNECTION_OK, PQerrorMessage(conn));
    auto res = PQexec(conn, text.c_str());
    std::string result;
    auto ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    std::string message = PQresultErrorMessage(res);
    if (ok && PQntuples(res) > 0)
      result = PQgetvalue(res, 0, 0);
    PQclear(res);
    PQfinish(conn);
    REQUIRE_MESSAGE(ok, text << ": " << message);
    return result;
  }

  std::string dir;
  int port = 0;

private:
  /// Whether a process of group `pgid` runs (is not a zombie).
  static bool group_runs(pid_t pgid) {
    for (auto& x : std::filesystem::directory_iterator("/proc")) {
      auto name = x.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos)
        continue;
      std::ifstream in{x.path() / "stat"};
      std::string stat;
      std::getline(in, stat);
      auto paren = stat.rfind(')');
      if (paren == std::string::npos)
        continue;
      std::istringstream rest{stat.substr(paren + 2)};
      char state = 0;
      long ppid = 0;
      long group = 0;
      if (rest >> state >> ppid >> group && group == pgid && state != 'Z')
        return true;
    }
    return false;
  }

  /// A process that stops the server and removes `dir` once this process
  /// closes its end of a pipe: at the end of the test, or when it dies.
  void start_watchdog() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    watchdog_ = ::fork();
    REQUIRE(watchdog_ >= 0);
    if (watchdog_ == 0) {
      // Only exec after a fork: other threads may hold locks.
      ::dup2(fds[0], 0);
      ::execl("/bin/sh", "sh", "-c",
              "cat >/dev/null; "
              "pid=$(head -n1 \"$1/data/postmaster.pid\" 2>/dev/null); "
              "if [ -n \"$pid\" ] && kill -QUIT \"$pid\" 2>/dev/null; then "
              "for i in $(seq 50); do kill -0 \"$pid\" 2>/dev/null || break; "
              "sleep 0.1; done; fi; rm -rf \"$1\"",
              "sh", dir.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    ::close(fds[0]);
    watchdog_pipe_ = fds[1];
  }

  void make_certificates() {
    auto openssl = [this](const std::string& args) {
      auto cmd = "cd " + dir + " && openssl " + args + " >>" + dir +
                 "/openssl.log 2>&1";
      REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0,
                      "openssl " << args << ": "
                                 << read_all(dir + "/openssl.log"));
    };
    openssl("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=pool-test-ca "
            "-keyout ca.key -out ca.crt");
    openssl("req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 "
            "-keyout server.key -out server.csr");
    std::ofstream ext{dir + "/server.ext"};
    ext << "subjectAltName = IP:127.0.0.1, DNS:localhost\n";
    ext.close();
    openssl("x509 -req -in server.csr -CA ca.crt -CAkey ca.key "
            "-CAcreateserial -days 2 -extfile server.ext -out server.crt");
    REQUIRE(::chmod((dir + "/server.key").c_str(), 0600) == 0);
  }

  void stop_server() {
    if (server_ <= 0)
      return;
    // Fast shutdown; the watchdog kills it should it hang.
    ::kill(server_, SIGINT);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int status = 0;
    while (::waitpid(server_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(server_, SIGKILL);
        ::waitpid(server_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10)); // a child
    }
    server_ = 0;
  }

  void start_server() {
    auto log = dir + "/server.log";
    auto postgres = pg_bin() + "/postgres";
    auto data = dir + "/data";
    server_ = ::fork();
    REQUIRE(server_ >= 0);
    server_pgid_ = server_;
    if (server_ == 0) {
      auto fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::setsid();
      account_.become();
      ::execl(postgres.c_str(), postgres.c_str(), "-D", data.c_str(),
              static_cast<char*>(nullptr));
      _exit(127);
    }
    auto ping = admin_conninfo();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (PQping(ping.c_str()) != PQPING_OK) {
      int status = 0;
      if (::waitpid(server_, &status, WNOHANG) == server_) {
        server_ = 0;
        FAIL("the PostgreSQL server stopped at start: " << read_all(log));
      }
      if (std::chrono::steady_clock::now() > deadline)
        FAIL("the PostgreSQL server did not start within 60 s: "
             << read_all(log));
      std::this_thread::sleep_for(std::chrono::milliseconds(20)); // polling
    }
  }

  bool tls_;
  pg_account account_;
  pid_t server_ = 0;
  pid_t server_pgid_ = 0;
  pid_t watchdog_ = 0;
  int watchdog_pipe_ = -1;
};

} // namespace pool::test
