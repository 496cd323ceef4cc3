// The remote programs (pool_serve, pool_node, poolctl) take their token
// from a file or the environment, never from the command line: no
// /proc/PID/cmdline on the host holds it, on 127.0.0.1 only.
#include "fixture.hpp"

#include "../cmdlines.hpp"

using pool::test::cmdline_of;
using pool::test::cmdlines_with;

namespace {

constexpr const char* secret = "n0t-in-any-cmdline-7f3a9c";

/// Waits (at most 10 s) until `c` runs `program` (exec done).
void await_exec(const child& c, const std::string& program) {
  REQUIRE_MESSAGE(eventually(
                      [&] {
                        return cmdline_of(c.pid()).find(program) !=
                               std::string::npos;
                      },
                      10s),
                  "never ran " << program << "; stderr: " << c.err());
}

/// A listening socket on 127.0.0.1 that never accepts: a client connects
/// (the kernel completes the handshake) and then waits.
struct silent_port {
  int fd = -1;
  uint16_t port = 0;

  silent_port() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(listen(fd, 8) == 0);
    socklen_t len = sizeof(addr);
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }

  ~silent_port() {
    close(fd);
  }
};

std::vector<std::string> programs() {
  return {POOL_SERVE, POOL_NODE, POOLCTL};
}

/// Arguments each program needs besides its token.
std::vector<std::string> args_of(const std::string& program) {
  if (program == POOL_SERVE)
    return {program, "--port", "0"};
  if (program == POOL_NODE)
    return {program, "--host", "127.0.0.1", "--port", "1"};
  return {program, "--host", "127.0.0.1", "--port", "1", "stats"};
}

} // namespace

TEST_CASE("pool_serve, pool_node and poolctl run with the token from a file "
          "or the environment, and no process's command line holds it" *
          doctest::timeout(60)) {
  scratch_dir dir;
  auto file = secret_file(dir, "token", secret);
  // The server: the token from --token-file.
  child server{dir, "serve", {POOL_SERVE, "--token-file", file, "--port", "0"}};
  auto port = first_line(server);
  // A node: from POOL_TOKEN_FILE.
  child node{dir, "node",
             launch{{POOL_NODE, "--host", "127.0.0.1", "--port", port,
                     "--workers", "2"},
                    {"POOL_TOKEN_FILE=" + file}}};
  // An operator: from POOL_TOKEN; its stats show the node joined.
  auto ctl_stats = [&] {
    child ctl{dir, "ctl",
              launch{{POOLCTL, "--host", "127.0.0.1", "--port", port, "stats"},
                     {std::string{"POOL_TOKEN="} + secret}}};
    auto status = ctl.wait(30s);
    return status == 0 && ctl.out().find(" joined=2 ") != std::string::npos;
  };
  CHECK(eventually(ctl_stats, 20s));
  // A poolctl held waiting on a port that never answers, to look at it.
  silent_port silent;
  child waiting{dir, "waiting",
                launch{{POOLCTL, "--host", "127.0.0.1", "--port",
                        std::to_string(silent.port), "stats"},
                       {std::string{"POOL_TOKEN="} + secret}}};
  await_exec(server, "pool_serve");
  await_exec(node, "pool_node");
  await_exec(waiting, "poolctl");
  REQUIRE(waiting.running());
  // The scan sees this test's children: a marker in one's argv is found.
  child control{dir, "control",
                {"/bin/sh", "-c", "sleep 3", "cmdline-scan-marker-51c2"}};
  await_exec(control, "cmdline-scan-marker-51c2");
  CHECK_FALSE(cmdlines_with("cmdline-scan-marker-51c2").empty());
  auto where = pool::test::cmdlines_text(secret);
  CHECK_MESSAGE(where.empty(), "the token is in:\n" << where);
  // The file's path is what shows.
  CHECK(cmdline_of(server.pid()).find("--token-file " + file) !=
        std::string::npos);
  node.signal(SIGTERM);
  CHECK(node.wait(20s) == 0);
}

TEST_CASE("--token on the command line is refused, naming --token-file and "
          "the environment variables" *
          doctest::timeout(60)) {
  scratch_dir dir;
  for (auto& program : programs()) {
    for (auto form :
         {std::vector<std::string>{"--token", secret},
          std::vector<std::string>{std::string{"--token="} + secret}}) {
      auto argv = args_of(program);
      argv.insert(argv.begin() + 1, form.begin(), form.end());
      child c{dir, "refused", argv};
      CHECK(c.wait(20s) == 2);
      auto err = c.err();
      INFO(program << ": " << err);
      CHECK(err.find("--token would show the token") != std::string::npos);
      CHECK(err.find("--token-file FILE") != std::string::npos);
      CHECK(err.find("POOL_TOKEN_FILE") != std::string::npos);
      CHECK(err.find("POOL_TOKEN ") != std::string::npos);
      CHECK(err.find(secret) == std::string::npos);
    }
  }
}

TEST_CASE("a token file that others may read, or no token at all, is "
          "refused with what to do" *
          doctest::timeout(60)) {
  scratch_dir dir;
  auto open_file = secret_file(dir, "open", secret);
  REQUIRE(chmod(open_file.c_str(), 0644) == 0);
  for (auto& program : programs()) {
    auto argv = args_of(program);
    argv.insert(argv.begin() + 1, {"--token-file", open_file});
    child readable{dir, "readable", argv};
    CHECK(readable.wait(20s) == 2);
    INFO(program << ": " << readable.err());
    CHECK(readable.err().find("chmod 600 " + open_file) != std::string::npos);
    child by_variable{
        dir, "by_variable",
        launch{args_of(program), {"POOL_TOKEN_FILE=" + open_file}}};
    CHECK(by_variable.wait(20s) == 2);
    CHECK(by_variable.err().find("POOL_TOKEN_FILE: " + open_file) !=
          std::string::npos);
    child empty{dir, "empty",
                launch{args_of(program), {"POOL_TOKEN=", "POOL_TOKEN_FILE="}}};
    CHECK(empty.wait(20s) == 2);
    CHECK(empty.err().find("is set but empty") != std::string::npos);
    child none{dir, "none",
               launch{args_of(program), {"POOL_TOKEN", "POOL_TOKEN_FILE"}}};
    CHECK(none.wait(20s) == 2);
    CHECK(none.err().find("no token: pass --token-file FILE") !=
          std::string::npos);
  }
}

TEST_CASE("--help names only --token-file and the environment for the "
          "token" *
          doctest::timeout(60)) {
  scratch_dir dir;
  for (auto& program : programs()) {
    child help{dir, "help", {program, "--help"}};
    CHECK(help.wait(20s) == 0);
    auto out = help.out();
    INFO(program << ": " << out);
    CHECK(out.find("[--token-file FILE]") != std::string::npos);
    CHECK(out.find("POOL_TOKEN_FILE") != std::string::npos);
    CHECK(out.find("POOL_TOKEN ") != std::string::npos);
    CHECK(out.find("--token ") == std::string::npos);
    CHECK(out.find("--token T") == std::string::npos);
  }
}
