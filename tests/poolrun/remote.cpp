// poolrun --serve and --join: worker nodes in other processes run commands
// too, on 127.0.0.1 only; every process is real and every wait bounded.
#include "child_process.hpp"

#include <algorithm>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

using namespace poolrun::test;

namespace {

constexpr const char* token = "poolrun-test-token";

/// Command `i` (1-based): sleeps, prints its number on stdout and where it
/// ran (the environment's MARK) on stderr; every fifth one fails.
std::string commands(int n, const std::string& sleep = "0.2") {
  std::string text;
  for (int i = 1; i <= n; ++i)
    text += "sleep " + sleep + "; echo line-" + std::to_string(i) +
            "; echo ran-on-$MARK >&2; exit " + (i % 5 == 0 ? "3" : "0") + "\n";
  return text;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto i = text.find(what); i != std::string::npos;
       i = text.find(what, i + what.size()))
    ++n;
  return n;
}

/// The port `poolrun --serve 0` announced on stderr, waiting at most 10 s.
uint16_t served_port(child_process& server) {
  const std::string key = "serving on 127.0.0.1:";
  REQUIRE_MESSAGE(server.read_until(
                      [&](const std::string&) {
                        auto i = server.err().find(key);
                        return i != std::string::npos &&
                               server.err().find('\n', i) != std::string::npos;
                      },
                      10s),
                  "no port announced; stderr: " << server.err());
  auto i = server.err().find(key) + key.size();
  auto port = std::atoi(server.err().c_str() + i);
  REQUIRE(port > 0);
  REQUIRE(port < 65536);
  return static_cast<uint16_t>(port);
}

std::vector<std::string> with_env(const std::string& mark,
                                  std::vector<std::string> args) {
  args = poolrun_argv(std::move(args));
  args.insert(args.begin(), {"env", "MARK=" + mark});
  return args;
}

} // namespace

TEST_CASE("--serve -j 1 with a --join node of 2 workers: 30 commands give the "
          "same outputs and exit status as a local run, some ran on the node, "
          "and the node exits 0 after the server" *
          doctest::timeout(90)) {
  auto input = commands(30);
  temp_dir tmp;
  child_process local{with_env("local", {"-j", "3", "-k"}), input, tmp.path};
  auto local_status = local.exit_code(60s);
  REQUIRE(local_status == 6);
  REQUIRE(count_of(local.err(), "ran-on-local") == 30);
  // The token comes from the environment for the server, from --token for
  // the node.
  auto server_args = with_env("serve", {"--serve", "0", "-j", "1", "-k"});
  server_args.insert(server_args.begin() + 2,
                     std::string{"POOLRUN_TOKEN="} + token);
  child_process server{server_args, input, tmp.path};
  auto port = served_port(server);
  child_process node{
      with_env("node", {"--join", "127.0.0.1:" + std::to_string(port), "-j",
                        "2", "--token", token})};
  CHECK(server.exit_code(60s) == local_status);
  CHECK(server.out() == local.out());
  auto on_node = count_of(server.err(), "ran-on-node");
  auto on_server = count_of(server.err(), "ran-on-serve");
  CHECK(on_node + on_server == 30);
  // 2 of the 3 workers are the node's: it ran a good share.
  CHECK_MESSAGE(on_node >= 5, "stderr: " << server.err());
  // The node follows the server's end: exit 0, having run what it said.
  CHECK(node.exit_code(20s) == 0);
  CHECK_MESSAGE(
      node.err().find("joined the pool at 127.0.0.1:" + std::to_string(port) +
                      " with 2 workers") != std::string::npos,
      "node stderr: " << node.err());
  CHECK_MESSAGE(
      node.err().find(std::to_string(on_node) + " commands ran on this node") !=
          std::string::npos,
      "node stderr: " << node.err());
}

TEST_CASE("--join with a wrong token gets no work and fails with a clear "
          "message" *
          doctest::timeout(60)) {
  auto input = commands(10, "0.1");
  temp_dir tmp;
  child_process server{
      with_env("serve", {"--serve", "0", "-j", "1", "--token", token}), input,
      tmp.path};
  auto port = served_port(server);
  child_process node{
      with_env("node", {"--join", "127.0.0.1:" + std::to_string(port), "-j",
                        "2", "--token", "not-the-token"})};
  CHECK(node.exit_code(20s) == 255);
  CHECK_MESSAGE(
      node.err().find("poolrun: the pool at 127.0.0.1:" + std::to_string(port) +
                      " refused this node: wrong token") != std::string::npos,
      "node stderr: " << node.err());
  CHECK(server.exit_code(30s) == 2);
  CHECK(count_of(server.err(), "ran-on-serve") == 10);
  CHECK(count_of(server.err(), "ran-on-node") == 0);
  CHECK_MESSAGE(server.err().find("refused node_join") != std::string::npos,
                "server stderr: " << server.err());
}

TEST_CASE("--join gives up on an unreachable pool after --join-wait" *
          doctest::timeout(30)) {
  // A port nothing listens on: bound, never listening.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  auto port = ntohs(addr.sin_port);
  auto started = std::chrono::steady_clock::now();
  child_process node{
      poolrun_argv({"--join", "127.0.0.1:" + std::to_string(port), "--token",
                    token, "--join-wait", "1s"})};
  CHECK(node.exit_code(20s) == 255);
  ::close(fd);
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(took >= 500ms);
  CHECK(took < 15s);
  CHECK_MESSAGE(node.err().find("cannot reach the pool at 127.0.0.1:" +
                                std::to_string(port) + " within 1s") !=
                    std::string::npos,
                "node stderr: " << node.err());
}

TEST_CASE("--serve and --join refuse to run without a token or with options "
          "that do not fit" *
          doctest::timeout(30)) {
  auto refused = [](std::vector<std::string> args, const std::string& message) {
    auto argv = poolrun_argv(std::move(args));
    argv.insert(argv.begin(), {"env", "-u", "POOLRUN_TOKEN"});
    child_process run{argv, "echo hi\n"};
    CHECK(run.exit_code(20s) == 255);
    CHECK_MESSAGE(run.err().find(message) != std::string::npos,
                  "stderr: " << run.err());
    CHECK(run.out().empty());
  };
  refused({"--serve", "0"}, "--serve needs a shared token: give --token T or "
                            "set POOLRUN_TOKEN");
  refused({"--join", "127.0.0.1:9"}, "--join needs a shared token");
  refused({"--join", "nowhere"}, "expected HOST:PORT");
  refused({"--serve", "0", "--join", "127.0.0.1:9", "--token", "t"},
          "--serve and --join exclude each other");
  refused({"--join", "127.0.0.1:9", "--token", "t", "-k"},
          "--join makes a worker node: it reads no input");
  refused({"--bind", "0.0.0.0"}, "--bind needs --serve");
  refused({"--serve", "0", "--token", "t", "-j", "0"},
          "a pool needs at least one local worker");
}
