// What the remote tests share: child processes, a published pool in the
// test process, and a batch of submits with its outcomes. Included by one
// test file per executable.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <pool/all.hpp>
#include <pool/remote.hpp>

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

/// Writes `secret` into `dir/name`, readable by its owner only; returns
/// the path (for `--token-file`).
std::string secret_file(const scratch_dir& dir, const std::string& name,
                        const std::string& secret) {
  auto path = dir.path + "/" + name;
  std::ofstream{path, std::ios::trunc} << secret << '\n';
  REQUIRE(chmod(path.c_str(), 0600) == 0);
  return path;
}

/// A program to start: its command line, and `NAME=value` entries that
/// replace or add to the environment it inherits (`NAME` alone removes).
struct launch {
  std::vector<std::string> argv;
  std::vector<std::string> env;
};

/// A child process whose stdout and stderr go to files; killed (SIGKILL)
/// and reaped at scope exit if still running.
class child {
public:
  child(const scratch_dir& dir, const std::string& name,
        std::vector<std::string> argv)
      : child(dir, name, launch{std::move(argv), {}}) {
    // nop
  }

  child(const scratch_dir& dir, const std::string& name, launch what)
      : out_(dir.path + "/" + name + ".out"),
        err_(dir.path + "/" + name + ".err") {
    // Everything the child needs is made before the fork.
    std::vector<char*> args;
    for (auto& x : what.argv)
      args.push_back(x.data());
    args.push_back(nullptr);
    auto replaced = [&](const char* entry) {
      for (auto& x : what.env) {
        auto name = x.substr(0, x.find('=')) + "=";
        if (std::strncmp(entry, name.c_str(), name.size()) == 0)
          return true;
      }
      return false;
    };
    std::vector<char*> envp;
    for (auto e = environ; *e != nullptr; ++e)
      if (!replaced(*e))
        envp.push_back(*e);
    for (auto& x : what.env)
      if (x.find('=') != std::string::npos)
        envp.push_back(x.data());
    envp.push_back(nullptr);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      auto out = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      auto err = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, 1);
      dup2(err, 2);
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
  }

  pid_t pid() const {
    return pid_;
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

  served_pool(caf::actor_system& sys, pool::pool_options opts,
              pool::remote_options remote = pool::remote_options{})
      : sys(sys) {
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
    remote.token(token).log(log.hook());
    auto gk = pool::spawn_gatekeeper<int64_t(int32_t)>(sys, handle, remote);
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

  /// A pool_node joining this pool, its token in POOL_TOKEN.
  launch node_args(const std::string& node_token, int workers,
                   int delay_ms = 0) {
    return {{POOL_NODE, "--host", "127.0.0.1", "--port", std::to_string(port),
             "--workers", std::to_string(workers), "--delay-ms",
             std::to_string(delay_ms)},
            {"POOL_TOKEN=" + node_token}};
  }
};

/// The CAF node id a pool_node child printed (`... as node <id>`).
[[maybe_unused]] std::string node_id_of(const child& node) {
  auto line = first_line(node);
  auto at = line.find(" as node ");
  REQUIRE_MESSAGE(at != std::string::npos, line);
  return line.substr(at + 9);
}

/// A thread joined at scope exit, also when a check failed.
class joining_thread {
public:
  template <class F>
  explicit joining_thread(F f) : thread_(std::move(f)) {
    // nop
  }

  ~joining_thread() {
    join();
  }

  void join() {
    if (thread_.joinable())
      thread_.join();
  }

private:
  std::thread thread_;
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
[[maybe_unused]] outcomes run_operations(caf::actor_system& sys, const caf::actor& pool,
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

[[maybe_unused]] void check_all_done(const outcomes& got, int32_t n) {
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

[[maybe_unused]] ctl_result poolctl(const scratch_dir& dir, uint16_t port,
                   std::vector<std::string> command,
                   const std::string& ctl_token = token,
                   std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{POOLCTL,
                                "--host",
                                "127.0.0.1",
                                "--port",
                                std::to_string(port),
                                "--token-file",
                                secret_file(dir, "poolctl.token", ctl_token)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), command.begin(), command.end());
  child ctl{dir, "poolctl", argv};
  auto status = ctl.wait(30s);
  return {status, ctl.out(), ctl.err()};
}

/// Stops a node with SIGTERM and returns the jobs it reports having run.
[[maybe_unused]] long long stop_node(child& node) {
  node.signal(SIGTERM);
  REQUIRE(node.wait(20s) == 0);
  auto jobs = number_after(node.out(), "jobs");
  REQUIRE_MESSAGE(jobs >= 0, "no job count: " << node.out());
  return jobs;
}

} // namespace
