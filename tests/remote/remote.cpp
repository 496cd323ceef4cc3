// Remote pools across processes, on 127.0.0.1 only: a pool published from
// the test process (or a pool_serve child), worker nodes (pool_node
// children), the control tool (poolctl) and a hostile client
// (remote_garbage). Every wait is bounded.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <pool/all.hpp>
#include <pool/remote.hpp>

#include "../sqlite_files.hpp"
#include "demo_job.hpp"

using namespace std::chrono_literals;

namespace {

// -- processes and files ------------------------------------------------------

/// A directory under /tmp, removed with its files at scope exit.
struct scratch_dir {
  std::string path;

  scratch_dir() {
    char name[] = "/tmp/pool-remote-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    path = name;
  }

  ~scratch_dir() {
    std::string cmd = "rm -rf '" + path + "'";
    if (std::system(cmd.c_str()) != 0)
      MESSAGE("could not remove " << path);
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

/// A child process whose stdout and stderr go to files; killed (SIGKILL)
/// and reaped at scope exit if still running.
class child {
public:
  child(const scratch_dir& dir, const std::string& name,
        std::vector<std::string> argv)
      : out_(dir.path + "/" + name + ".out"),
        err_(dir.path + "/" + name + ".err") {
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      auto out = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      auto err = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, 1);
      dup2(err, 2);
      std::vector<char*> args;
      for (auto& x : argv)
        args.push_back(x.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }

  child(const child&) = delete;
  child& operator=(const child&) = delete;

  ~child() {
    if (running()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  bool running() const {
    return pid_ > 0 && !status_;
  }

  void signal(int sig) {
    REQUIRE(running());
    kill(pid_, sig);
  }

  /// Waits at most `timeout` for the exit; returns the exit status, or -1
  /// for a signal. Kills the child and fails the test on timeout.
  int wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        status_ = st;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        status_ = -1;
        FAIL("child did not exit in time; stdout: " << out()
                                                    << "\nstderr: " << err());
      }
      std::this_thread::sleep_for(10ms); // polling a child process
    }
    return WIFEXITED(*status_) ? WEXITSTATUS(*status_) : -1;
  }

  /// SIGKILL, reaped.
  void kill_now() {
    signal(SIGKILL);
    int st = 0;
    waitpid(pid_, &st, 0);
    status_ = st;
  }

  std::string out() const {
    return read_file(out_);
  }

  std::string err() const {
    return read_file(err_);
  }

private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string out_;
  std::string err_;
};

/// Polls `pred` every 10 ms for at most `timeout`.
bool eventually(std::function<bool()> pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

/// The number after `key ` in `text` (e.g. `jobs 42`), or -1.
long long number_after(const std::string& text, const std::string& key) {
  auto i = text.find(key + " ");
  if (i == std::string::npos)
    return -1;
  return std::atoll(text.c_str() + i + key.size() + 1);
}

/// The first line of a child's stdout, waiting at most 10 s for it.
std::string first_line(const child& c) {
  std::string line;
  REQUIRE_MESSAGE(eventually(
                      [&] {
                        auto text = c.out();
                        auto nl = text.find('\n');
                        if (nl == std::string::npos)
                          return false;
                        line = text.substr(0, nl);
                        return true;
                      },
                      10s),
                  "no output from child; stderr: " << c.err());
  return line;
}

// -- the pool in the test process
// ----------------------------------------------

struct remote_config : caf::actor_system_config {
  remote_config() {
    pool::configure_remote(*this);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

constexpr const char* token = "s3cret-t0ken";

/// Log lines of a gatekeeper, kept for checks. Shared with the hook: the
/// gatekeeper may log after the test's scope ended.
class captured_log {
public:
  pool::log_hook hook() {
    auto st = state_;
    return [st](pool::log_level, const std::string&, const std::string& x) {
      std::lock_guard<std::mutex> guard{st->mtx};
      st->lines.push_back(x);
    };
  }

  bool contains(const std::string& text) const {
    std::lock_guard<std::mutex> guard{state_->mtx};
    for (auto& x : state_->lines)
      if (x.find(text) != std::string::npos)
        return true;
    return false;
  }

private:
  struct lines_state {
    std::mutex mtx;
    std::vector<std::string> lines;
  };
  std::shared_ptr<lines_state> state_ = std::make_shared<lines_state>();
};

/// A published pool whose one local worker is slow (20 ms a job), so that
/// the remote nodes do nearly all the work.
struct served_pool {
  caf::actor_system& sys;
  caf::actor handle;
  caf::actor gatekeeper;
  uint16_t port = 0;
  std::shared_ptr<std::atomic<uint64_t>> local_runs =
      std::make_shared<std::atomic<uint64_t>>(0);
  captured_log log;

  served_pool(caf::actor_system& sys, pool::pool_options opts) : sys(sys) {
    auto runs = local_runs;
    auto slow_job = [runs](int32_t x) -> int64_t {
      std::this_thread::sleep_for(20ms);
      ++*runs;
      return remote_demo::hash_job(x);
    };
    auto spawned = pool::spawn_pool(sys, slow_job,
                                    opts.workers(1)
                                        .kind(pool::worker_kind::dedicated)
                                        .log(pool::silent_log_hook()));
    REQUIRE(spawned);
    handle = *spawned;
    auto remote = pool::remote_options{}.token(token).log(log.hook());
    auto gk = pool::spawn_gatekeeper(sys, handle, remote);
    REQUIRE(gk);
    gatekeeper = *gk;
    auto bound = pool::publish_gatekeeper(sys, gatekeeper, remote);
    REQUIRE_MESSAGE(bound, pool::describe_remote(bound.error()));
    port = *bound;
  }

  served_pool(const served_pool&) = delete;
  served_pool& operator=(const served_pool&) = delete;

  /// Stops the pool (the gatekeeper follows), also when a check failed.
  ~served_pool() {
    caf::anon_send_exit(handle, caf::exit_reason::user_shutdown);
  }

  pool::pool_stats stats() {
    caf::scoped_actor self{sys};
    pool::pool_stats result;
    self->request(handle, 10s, pool::pool_stats_atom_v)
        .receive([&](pool::pool_stats& x) { result = x; },
                 [](caf::error& err) { FAIL(pool::describe(err)); });
    return result;
  }

  pool::gatekeeper_stats counters() {
    caf::scoped_actor self{sys};
    pool::gatekeeper_stats result;
    self->request(gatekeeper, 10s, pool::control_atom_v, std::string{token},
                  pool::gatekeeper_stats_atom_v)
        .receive([&](pool::gatekeeper_stats& x) { result = x; },
                 [](caf::error& err) { FAIL(pool::describe_remote(err)); });
    return result;
  }

  /// Waits until exactly `n` joined workers take part.
  void await_joined(uint64_t n) {
    uint64_t seen = 0;
    auto ok = eventually(
        [&] {
          seen = stats().joined;
          return seen == n;
        },
        15s);
    REQUIRE_MESSAGE(ok, "joined workers: " << seen << ", wanted " << n);
  }

  std::vector<std::string> node_args(const std::string& node_token, int workers,
                                     int delay_ms = 0) {
    return {POOL_NODE,
            "--host",
            "127.0.0.1",
            "--port",
            std::to_string(port),
            "--token",
            node_token,
            "--workers",
            std::to_string(workers),
            "--delay-ms",
            std::to_string(delay_ms)};
  }
};

/// Stops a pool at scope exit.
struct pool_guard {
  caf::actor handle;

  ~pool_guard() {
    caf::anon_send_exit(handle, caf::exit_reason::user_shutdown);
  }
};

/// Outcomes of a batch of submits: results by input, and errors.
struct outcomes {
  std::map<int32_t, int64_t> results;
  std::vector<std::string> errors;
  size_t wrong = 0;
  /// False when the time ran out before every outcome arrived.
  bool complete = true;
};

/// Submits 1..n (from actors of 100 submits each, keeping each actor's list
/// of pending requests short) and collects every outcome, waiting at most
/// `timeout` in all. Safe to call from any non-actor thread (no doctest
/// assertions).
outcomes run_operations(caf::actor_system& sys, const caf::actor& pool,
                        int32_t n, std::chrono::seconds timeout) {
  caf::scoped_actor self{sys};
  auto collector = caf::actor_cast<caf::actor>(self);
  for (int32_t first = 1; first <= n; first += 100) {
    auto last = std::min(n, first + 99);
    sys.spawn([=](caf::event_based_actor* submitter) {
      for (auto x = first; x <= last; ++x)
        submitter->request(pool, caf::infinite, pool::submit_atom_v, x)
            .then([=](int64_t y) { submitter->send(collector, x, y); },
                  [=](caf::error& err) { submitter->send(collector, x, err); });
    });
  }
  outcomes result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int32_t i = 0; i < n; ++i) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto timed_out = false;
    self->receive(
        [&](int32_t x, int64_t y) {
          result.results[x] = y;
          if (y != remote_demo::hash_job(x))
            ++result.wrong;
        },
        [&](int32_t x, caf::error& err) {
          result.errors.push_back(std::to_string(x) + ": " +
                                  pool::describe(err));
        },
        caf::after(std::max(left, 1ms)) >> [&] { timed_out = true; });
    if (timed_out) {
      result.complete = false;
      break;
    }
  }
  return result;
}

void check_all_done(const outcomes& got, int32_t n) {
  REQUIRE_MESSAGE(got.complete, "only "
                                    << got.results.size() + got.errors.size()
                                    << " of " << n << " outcomes in time");
  CHECK(got.results.size() == static_cast<size_t>(n));
  CHECK(got.wrong == 0);
  CHECK_MESSAGE(got.errors.empty(),
                got.errors.size()
                    << " failed, first: "
                    << (got.errors.empty() ? "" : got.errors.front()));
}

/// Runs poolctl; returns (exit status, stdout, stderr).
struct ctl_result {
  int status;
  std::string out;
  std::string err;
};

ctl_result poolctl(const scratch_dir& dir, uint16_t port,
                   std::vector<std::string> command,
                   const std::string& ctl_token = token,
                   std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{
      POOLCTL,   "--host", "127.0.0.1", "--port", std::to_string(port),
      "--token", ctl_token};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), command.begin(), command.end());
  child ctl{dir, "poolctl", argv};
  auto status = ctl.wait(30s);
  return {status, ctl.out(), ctl.err()};
}

/// Stops a node with SIGTERM and returns the jobs it reports having run.
long long stop_node(child& node) {
  node.signal(SIGTERM);
  REQUIRE(node.wait(20s) == 0);
  auto jobs = number_after(node.out(), "jobs");
  REQUIRE_MESSAGE(jobs >= 0, "no job count: " << node.out());
  return jobs;
}

} // namespace

// -- publishing
// -----------------------------------------------------------------

namespace {

/// A type that never leaves the process: no type ID, no inspect.
struct local_only {
  int value = 0;
};

} // namespace

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(local_only)

TEST_CASE("publish and join refuse payload types the actor system cannot "
          "send and invalid options" *
          doctest::timeout(30)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto opts = pool::pool_options{}.workers(1).log(pool::silent_log_hook());
  auto in_job = [](local_only x) { return x.value; };
  auto out_job = [](int32_t x) { return local_only{x}; };
  auto in_pool = pool::spawn_pool(sys, in_job, opts);
  REQUIRE(in_pool);
  pool_guard in_guard{*in_pool};
  auto remote =
      pool::remote_options{}.token(token).log(pool::silent_log_hook());
  auto refused = pool::publish_pool<decltype(in_job)>(sys, *in_pool, remote);
  REQUIRE(!refused);
  CHECK(pool::is(refused.error(), pool::pool_errc::invalid_option));
  auto text = pool::describe(refused.error());
  CHECK(text.find("publish") != std::string::npos);
  CHECK(text.find("local_only") != std::string::npos);
  // The result type counts too; a signature works as well as a type.
  refused = pool::publish_pool<local_only(int32_t)>(sys, *in_pool, remote);
  REQUIRE(!refused);
  CHECK(pool::describe(refused.error()).find("local_only") !=
        std::string::npos);
  auto joined = pool::join_remote_pool(sys, "127.0.0.1", 1, token, 1, out_job);
  REQUIRE(!joined);
  CHECK(pool::describe(joined.error()).find("join") != std::string::npos);
  // Options: a token is required.
  auto no_token = pool::publish_pool<int64_t(int32_t)>(sys, *in_pool,
                                                       pool::remote_options{});
  REQUIRE(!no_token);
  CHECK(pool::describe(no_token.error()).find("token") != std::string::npos);
  auto no_workers = pool::join_remote_pool(sys, "127.0.0.1", 1, token, 0,
                                           remote_demo::hash_job);
  REQUIRE(!no_workers);
  CHECK(pool::describe(no_workers.error()).find("workers") !=
        std::string::npos);
  // TLS needs the OpenSSL module in the actor system.
  pool::tls_files files{"/nonexistent.crt", "/nonexistent.key", "", ""};
  auto no_tls = pool::publish_pool<int64_t(int32_t)>(
      sys, *in_pool, pool::remote_options{remote}.tls(files));
  REQUIRE(!no_tls);
  CHECK(pool::describe(no_tls.error()).find("tls") != std::string::npos);
  // A serializable pool publishes, on loopback by default.
  auto ok_pool = pool::spawn_pool(sys, remote_demo::hash_job, opts);
  REQUIRE(ok_pool);
  pool_guard ok_guard{*ok_pool};
  auto port = pool::publish_pool<decltype(remote_demo::hash_job)>(sys, *ok_pool,
                                                                  remote);
  REQUIRE_MESSAGE(port, pool::describe_remote(port.error()));
  CHECK(*port != 0);
}

// -- work across processes ----------------------------------------------------

TEST_CASE("two worker nodes run 10000 operations with correct results" *
          doctest::timeout(60)) {
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}.max_attempts(2)};
  child node_a{dir, "node_a", served.node_args(token, 4)};
  child node_b{dir, "node_b", served.node_args(token, 4)};
  served.await_joined(8);
  auto got = run_operations(sys, served.handle, 10000, 45s);
  check_all_done(got, 10000);
  auto stats = served.stats();
  CHECK(stats.completed == 10000);
  CHECK(stats.failed == 0);
  auto jobs_a = stop_node(node_a);
  auto jobs_b = stop_node(node_b);
  auto local = static_cast<long long>(served.local_runs->load());
  MESSAGE("node a ran " << jobs_a << ", node b " << jobs_b << ", local "
                        << local);
  CHECK(jobs_a > 0);
  CHECK(jobs_b > 0);
  CHECK(jobs_a + jobs_b + local >= 10000);
  // Both nodes left: their workers leave the stats.
  served.await_joined(0);
}

TEST_CASE("SIGKILL of a worker node mid-run: every operation still "
          "completes and none is lost while its workers leave the stats" *
          doctest::timeout(60)) {
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys,
                     pool::pool_options{}.max_attempts(3).backoff(10ms, 100ms)};
  // 1 ms a job keeps the run going long enough to kill a node in its middle.
  child victim{dir, "victim", served.node_args(token, 4, 1)};
  child survivor{dir, "survivor", served.node_args(token, 4, 1)};
  served.await_joined(8);
  std::thread killer{[&] {
    // Once a fifth of the work is done, with attempts in flight.
    eventually([&] { return served.stats().completed >= 2000; }, 30s);
    victim.kill_now();
  }};
  auto got = run_operations(sys, served.handle, 10000, 50s);
  killer.join();
  check_all_done(got, 10000);
  auto stats = served.stats();
  MESSAGE("retried " << stats.retried << ", completed " << stats.completed);
  CHECK(stats.completed == 10000);
  CHECK(stats.failed == 0);
  // The victim held attempts when it died: they failed and ran elsewhere.
  CHECK(stats.retried > 0);
  // Only the survivor's workers remain.
  served.await_joined(4);
  CHECK(stop_node(survivor) > 0);
}

// -- admission and hostile input ---------------------------------------------

TEST_CASE("a node with a wrong token is refused and gets no work" *
          doctest::timeout(30)) {
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}};
  child intruder{dir, "intruder", served.node_args("wrong-token", 4)};
  CHECK(intruder.wait(15s) == 1);
  CHECK(intruder.err().find("refused") != std::string::npos);
  CHECK(number_after(intruder.out(), "jobs") == 0);
  auto counters = served.counters();
  CHECK(counters.joins_refused == 1);
  CHECK(counters.joins_accepted == 0);
  CHECK(counters.workers_joined == 0);
  CHECK(served.log.contains("refused node_join"));
  // The pool works on without it.
  auto got = run_operations(sys, served.handle, 20, 20s);
  check_all_done(got, 20);
  auto stats = served.stats();
  CHECK(stats.joined == 0);
  CHECK(stats.workers == 1);
}

namespace {

/// Joins the pool at `port` from `node_sys` with 8 dedicated workers.
caf::expected<caf::actor> join_with_8(caf::actor_system& node_sys,
                                      uint16_t port,
                                      const std::string& node_token) {
  return pool::join_remote_pool(node_sys, "127.0.0.1", port, node_token, 8,
                                remote_demo::hash_job,
                                pool::node_options{}
                                    .kind(pool::worker_kind::dedicated)
                                    .log(pool::silent_log_hook()));
}

} // namespace

TEST_CASE("a refused join returns once the node's workers have stopped, so "
          "its actor system shuts down at once" *
          doctest::timeout(60)) {
  // A worker still stopping while its actor system shuts down could send
  // its down message to the network layer's broker (which monitors every
  // worker sent over the network) after that broker stopped; the message
  // kept the worker alive and the system's destructor waited forever.
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}};
  for (int round = 0; round < 40; ++round) {
    CAPTURE(round);
    remote_config node_cfg;
    auto node_sys = std::make_unique<caf::actor_system>(node_cfg);
    auto before = node_sys->registry().running();
    auto node = join_with_8(*node_sys, served.port, "not-the-token");
    REQUIRE(!node);
    CHECK(node.error().category() == pool::remote_error_category);
    // No worker runs any more; the node itself may still be on its way out.
    CHECK(node_sys->registry().running() <= before + 1);
    node_sys.reset(); // Returns (CTest's timeout would catch a hang).
  }
  CHECK(served.counters().joins_refused == 40);
}

TEST_CASE("an exit sent to a joined node stops its workers before it ends, "
          "so its actor system shuts down at once" *
          doctest::timeout(90)) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}};
  for (int round = 0; round < 10; ++round) {
    CAPTURE(round);
    remote_config node_cfg;
    auto node_sys = std::make_unique<caf::actor_system>(node_cfg);
    auto before = node_sys->registry().running();
    auto node = join_with_8(*node_sys, served.port, token);
    REQUIRE(node);
    served.await_joined(8);
    {
      caf::scoped_actor self{*node_sys, true};
      self->monitor(*node);
      caf::anon_send_exit(*node, caf::exit_reason::user_shutdown);
      auto down = false;
      self->receive(
          [&](caf::down_msg& msg) {
            down = true;
            CHECK(msg.reason == caf::exit_reason::user_shutdown);
          },
          caf::after(20s) >> [] {});
      REQUIRE(down);
    }
    // No worker runs once the node is gone.
    CHECK(node_sys->registry().running() == before);
    node_sys.reset(); // Returns (CTest's timeout would catch a hang).
    served.await_joined(0);
  }
}

TEST_CASE("a join that fails without a refusal flushes through the "
          "gatekeeper, then returns with no worker left" *
          doctest::timeout(60)) {
  // Not a pool's gatekeeper: it answers every message with an error. The
  // pool might have taken the workers anyway, so the node sends one more
  // message through it (the leave's round trip) before it ends.
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto seen = std::make_shared<std::atomic<int>>(0);
  auto fake = sys.spawn([seen](caf::event_based_actor* self) {
    self->set_default_handler(
        [seen](caf::scheduled_actor*,
               caf::message_view&) -> caf::result<caf::message> {
          ++*seen;
          return caf::make_error(caf::sec::unexpected_message);
        });
    return caf::behavior{[](int32_t) {}};
  });
  auto port = caf::io::publish(fake, 0, "127.0.0.1");
  REQUIRE(port);
  remote_config node_cfg;
  auto node_sys = std::make_unique<caf::actor_system>(node_cfg);
  auto before = node_sys->registry().running();
  auto node = pool::join_remote_pool(
      *node_sys, "127.0.0.1", *port, token, 3, remote_demo::hash_job,
      pool::node_options{}
          .kind(pool::worker_kind::dedicated)
          .join_timeout(5s)
          .log(pool::silent_log_hook()));
  REQUIRE(!node);
  CHECK(node.error() == caf::sec::unexpected_message);
  CHECK(seen->load() == 2); // node_join, then the flushing round trip
  CHECK(node_sys->registry().running() <= before + 1);
  node_sys.reset();
  caf::anon_send_exit(fake, caf::exit_reason::user_shutdown);
}

TEST_CASE("garbage sent to the gatekeeper is dropped and counted without "
          "disturbing the pool" *
          doctest::timeout(45)) {
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}};
  child node{dir, "node", served.node_args(token, 4)};
  served.await_joined(4);
  // Raw bytes on the port: not even CAF's handshake.
  {
    auto fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(served.port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    std::mt19937 rng{42};
    std::vector<char> junk(4096);
    for (auto& x : junk)
      x = static_cast<char>(rng());
    CHECK(write(fd, junk.data(), junk.size()) > 0);
    close(fd);
  }
  // Malformed, unexpected and forged messages from a CAF peer.
  child garbage{dir,
                "garbage",
                {REMOTE_GARBAGE, "127.0.0.1", std::to_string(served.port)}};
  REQUIRE_MESSAGE(garbage.wait(30s) == 0, garbage.out() << garbage.err());
  pool::gatekeeper_stats counters;
  auto all_counted = eventually(
      [&] {
        counters = served.counters();
        return counters.dropped >= 10;
      },
      10s);
  MESSAGE(pool::to_string(counters));
  CHECK(all_counted);
  CHECK(counters.dropped == 10);
  CHECK(counters.joins_refused == 2);
  CHECK(counters.controls_refused == 1);
  CHECK(counters.joins_accepted == 1);
  // Stats still answer, the node is still joined and work completes.
  auto stats = served.stats();
  CHECK(stats.joined == 4);
  auto got = run_operations(sys, served.handle, 1000, 30s);
  check_all_done(got, 1000);
  CHECK(stop_node(node) > 0);
}

// -- the control program ------------------------------------------------------

TEST_CASE("poolctl: stats match the pool stats and resize takes effect and "
          "errors exit 1 and drain finishes the work and stops the pool" *
          doctest::timeout(60)) {
  scratch_dir dir;
  remote_config cfg;
  caf::actor_system sys{cfg};
  served_pool served{sys, pool::pool_options{}};
  child node{dir, "node", served.node_args(token, 2, 5)};
  served.await_joined(2);
  // An idle pool: its figures do not change between the two snapshots.
  auto own = pool::to_string(served.stats());
  auto ctl = poolctl(dir, served.port, {"stats"});
  CHECK(ctl.status == 0);
  CHECK(ctl.out == own + "\n");
  ctl = poolctl(dir, served.port, {"resize", "3"});
  CHECK(ctl.status == 0);
  CHECK(served.stats().configured == 3);
  CHECK(served.stats().workers == 5);
  // Errors: the shepherd's own, and the gatekeeper's refusal.
  ctl = poolctl(dir, served.port, {"resize", "0"});
  CHECK(ctl.status == 1);
  CHECK(ctl.err.find("pool.invalid_option") != std::string::npos);
  ctl = poolctl(dir, served.port, {"cancel", "123456"});
  CHECK(ctl.status == 1);
  CHECK(ctl.err.find("pool.unknown_operation") != std::string::npos);
  ctl = poolctl(dir, served.port, {"stats"}, "wrong-token");
  CHECK(ctl.status == 1);
  CHECK(ctl.err.find("refused") != std::string::npos);
  ctl = poolctl(dir, served.port, {"resize"});
  CHECK(ctl.status == 2);
  // Drain while 300 operations are under way: all finish, then the pool
  // stops and poolctl returns.
  caf::scoped_actor watcher{sys};
  watcher->monitor(served.handle);
  outcomes got;
  std::thread submit{
      [&] { got = run_operations(sys, served.handle, 300, 50s); }};
  eventually([&] { return served.stats().submitted == 300; }, 10s);
  ctl = poolctl(dir, served.port, {"drain"});
  submit.join();
  check_all_done(got, 300);
  CHECK(ctl.status == 0);
  CHECK(ctl.out == "ok\n");
  auto stopped = false;
  watcher->receive([&](caf::down_msg&) { stopped = true; },
                   caf::after(10s) >> [] {});
  CHECK(stopped);
  // The gatekeeper went with the pool: the port no longer answers.
  ctl = poolctl(dir, served.port, {"stats"});
  CHECK(ctl.status == 1);
  node.signal(SIGTERM);
  CHECK(node.wait(20s) == 0);
}

// -- the example programs together ------------------------------------------

TEST_CASE("pool_serve with pool_node and poolctl: serve and join and drain "
          "and a node rejoins a restarted server" *
          doctest::timeout(60)) {
  scratch_dir dir;
  auto serve_args = [](const std::string& port) {
    return std::vector<std::string>{POOL_SERVE, "--token", token,
                                    "--port",   port,      "--reuse-address",
                                    "--submit", "2000"};
  };
  auto server = std::make_unique<child>(dir, "serve1", serve_args("0"));
  auto port_text = first_line(*server);
  auto port = static_cast<uint16_t>(std::stoi(port_text));
  child node{dir,
             "node",
             {POOL_NODE, "--host", "127.0.0.1", "--port", port_text, "--token",
              token, "--workers", "4"}};
  auto joined = [&](uint16_t p) {
    return eventually(
        [&] {
          auto ctl = poolctl(dir, p, {"stats"});
          return ctl.status == 0 &&
                 ctl.out.find(" joined=4 ") != std::string::npos;
        },
        20s);
  };
  CHECK(joined(port));
  CHECK(eventually(
      [&] {
        return server->out().find("completed 2000 correct 2000") !=
               std::string::npos;
      },
      30s));
  // The server dies; a new one on the same port gets the node back.
  server->kill_now();
  server = std::make_unique<child>(dir, "serve2", serve_args(port_text));
  REQUIRE(first_line(*server) == port_text);
  CHECK(joined(port));
  CHECK(eventually(
      [&] {
        return server->out().find("completed 2000 correct 2000") !=
               std::string::npos;
      },
      30s));
  auto ctl = poolctl(dir, port, {"drain"});
  CHECK(ctl.status == 0);
  CHECK(server->wait(20s) == 0);
  CHECK(server->out().find("pool stopped") != std::string::npos);
  CHECK(stop_node(node) >= 0);
  CHECK(node.err().find("rejoin") != std::string::npos);
}

TEST_CASE("with the durable store, a restarted shepherd loses nothing: "
          "pool_serve SIGKILLed mid-run and restarted over the same file and "
          "port, the node rejoins, and each of 2000 unique operations ends "
          "done once with the right result" *
          doctest::timeout(60)) {
  constexpr int n = 2000;
  scratch_dir dir;
  auto file = dir.path + "/queue.db";
  // 2 ms a job on 1 local + 2 node workers: about 1.5 s of work, so the
  // kill lands in the middle.
  auto serve_args = [&](const std::string& port) {
    return std::vector<std::string>{
        POOL_SERVE, "--token",         token,       "--port",
        port,       "--workers",       "1",         "--delay-ms",
        "2",        "--reuse-address", "--durable", file,
        "--submit", std::to_string(n)};
  };
  auto server = std::make_unique<child>(dir, "serve1", serve_args("0"));
  auto port_text = first_line(*server);
  auto port = static_cast<uint16_t>(std::stoi(port_text));
  child node{dir,
             "node",
             {POOL_NODE, "--host", "127.0.0.1", "--port", port_text, "--token",
              token, "--workers", "2", "--delay-ms", "2"}};
  // Whether the number after `key=` in poolctl's one-line stats passes.
  auto stat_is = [&](const std::string& key, auto pred) {
    auto ctl = poolctl(dir, port, {"stats"});
    auto i = ctl.out.find(" " + key + "=");
    return ctl.status == 0 && i != std::string::npos &&
           pred(std::atoll(ctl.out.c_str() + i + key.size() + 2));
  };
  REQUIRE(eventually(
      [&] { return stat_is("joined", [](long long x) { return x == 2; }); },
      20s));
  // Mid-run: some done, most not.
  REQUIRE(eventually(
      [&] {
        return stat_is("completed", [](long long x) { return x >= 200; });
      },
      20s));
  server->kill_now();
  CHECK(server->out().find("completed " + std::to_string(n)) ==
        std::string::npos);
  int64_t done_before = 0;
  {
    pool::test::connection db{file};
    done_before = db.query("SELECT count(*) FROM operations WHERE state = 2");
  }
  MESSAGE(done_before << " of " << n << " done when the server was killed");
  CHECK(done_before > 0);
  CHECK(done_before < n);
  // Restarted over the same file and port; it submits 1..n again.
  server = std::make_unique<child>(dir, "serve2", serve_args(port_text));
  REQUIRE(first_line(*server) == port_text);
  REQUIRE(eventually(
      [&] {
        return server->out().find("completed " + std::to_string(n) +
                                  " correct " + std::to_string(n)) !=
               std::string::npos;
      },
      30s));
  // The node came back to the new server (with its backoff) and worked.
  CHECK(eventually(
      [&] { return stat_is("joined", [](long long x) { return x == 2; }); },
      20s));
  auto ctl = poolctl(dir, port, {"drain"});
  CHECK(ctl.status == 0);
  CHECK(server->wait(20s) == 0);
  CHECK(stop_node(node) > 0);
  CHECK(node.err().find("rejoin") != std::string::npos);
  // On disk: exactly one operation per input, each done; none lost, none
  // added twice by the second run's submits.
  pool::test::connection db{file};
  CHECK(db.query("SELECT count(*) FROM operations") == n);
  CHECK(db.query("SELECT count(*) FROM operations WHERE state = 2") == n);
  CHECK(db.query("SELECT count(DISTINCT key) FROM operations") == n);
  CHECK(db.query("SELECT count(*) FROM operations WHERE key NOT LIKE "
                 "'input:%'") == 0);
}

// -- TLS
// ------------------------------------------------------------------------

namespace {

/// Writes a self-signed certificate and its key to `dir/name.{crt,key}`.
void make_certificate(const scratch_dir& dir, const std::string& name) {
  child openssl{dir,
                "openssl-" + name,
                {OPENSSL_PROGRAM, "req", "-x509", "-newkey", "rsa:2048",
                 "-nodes", "-keyout", dir.path + "/" + name + ".key", "-out",
                 dir.path + "/" + name + ".crt", "-days", "2", "-subj",
                 "/CN=pool-" + name}};
  REQUIRE(openssl.wait(30s) == 0);
}

std::vector<std::string> tls_args(const scratch_dir& dir,
                                  const std::string& name) {
  auto base = dir.path + "/" + name;
  return {"--tls-cert",  base + ".crt", "--tls-key",
          base + ".key", "--tls-ca",    base + ".crt"};
}

} // namespace

TEST_CASE("TLS: a node and an operator with the pool certificate get in but "
          "plain TCP and a foreign certificate do not" *
          doctest::timeout(60)) {
#if !defined(POOL_REMOTE_TLS) || !defined(OPENSSL_PROGRAM)
  MESSAGE("skipped: no OpenSSL module or no openssl program");
  return;
#else
  scratch_dir dir;
  make_certificate(dir, "pool");
  make_certificate(dir, "stranger");
  auto tls = tls_args(dir, "pool");
  std::vector<std::string> serve{POOL_SERVE, "--token", token, "--submit",
                                 "500"};
  serve.insert(serve.end(), tls.begin(), tls.end());
  child server{dir, "serve", serve};
  auto port_text = first_line(server);
  auto port = static_cast<uint16_t>(std::stoi(port_text));
  std::vector<std::string> join{POOL_NODE, "--host",    "127.0.0.1",
                                "--port",  port_text,   "--token",
                                token,     "--workers", "2"};
  join.insert(join.end(), tls.begin(), tls.end());
  child node{dir, "node", join};
  // The first join before any operator connects: see docs/remote.md on
  // CAF 0.17.6 dropping TLS connections when another TLS peer goes away.
  REQUIRE(first_line(node).rfind("joined", 0) == 0);
  auto tls_joined = eventually(
      [&] {
        auto ctl = poolctl(dir, port, {"stats"}, token, tls);
        return ctl.status == 0 &&
               ctl.out.find(" joined=2 ") != std::string::npos;
      },
      20s);
  CHECK_MESSAGE(tls_joined,
                "node: " << node.err() << "\nserver: " << server.err());
  CHECK(eventually(
      [&] {
        return server.out().find("completed 500 correct 500") !=
               std::string::npos;
      },
      30s));
  auto plain = poolctl(dir, port, {"stats"});
  CHECK(plain.status == 1);
  auto stranger =
      poolctl(dir, port, {"stats"}, token, tls_args(dir, "stranger"));
  CHECK(stranger.status == 1);
  // A node without TLS is not let in either.
  child plain_node{dir,
                   "plain_node",
                   {POOL_NODE, "--host", "127.0.0.1", "--port", port_text,
                    "--token", token, "--workers", "2"}};
  CHECK(plain_node.wait(30s) == 1);
  auto drained = poolctl(dir, port, {"drain"}, token, tls);
  CHECK(drained.status == 0);
  CHECK(server.wait(20s) == 0);
  CHECK(stop_node(node) >= 0);
#endif
}
