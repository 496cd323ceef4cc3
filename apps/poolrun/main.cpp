// poolrun: runs shell commands from input lines in parallel on a pool, with
// worker nodes on other machines joining it (--serve, --join).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <pool/all.hpp>
#include <pool/remote.hpp>

#include "arguments.hpp"
#include "job.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "type_ids.hpp"

namespace {

struct config : caf::actor_system_config {
  /// `remote`: with CAF's network layer, for --serve and --join.
  explicit config(bool remote) {
    // The pool's blocks first, then ours after them.
    if (remote)
      pool::configure_remote(*this);
    else
      pool::configure(*this);
    add_message_types<caf::id_block::poolrun>();
    add_error_category(caf::atom("poolrun"), poolrun::render_poolrun_error);
    set("logger.verbosity", caf::atom("quiet"));
  }
};

constexpr int own_error = 255;

int fail(const std::string& why) {
  std::fprintf(stderr, "poolrun: %s\n", why.c_str());
  return own_error;
}

/// Reads one command per line from `path` ("" or "-": standard input).
/// Returns what went wrong, or nothing.
std::optional<std::string> read_commands(const std::string& path,
                                         std::vector<std::string>& commands) {
  auto from_stdin = path.empty() || path == "-";
  auto fd = from_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY);
  auto name = from_stdin ? std::string{"standard input"} : "'" + path + "'";
  if (fd < 0)
    return "cannot read " + name + ": " + std::strerror(errno);
  std::string text;
  char buf[65536];
  for (;;) {
    auto n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      auto err = errno;
      if (!from_stdin)
        ::close(fd);
      return "cannot read " + name + ": " + std::strerror(err);
    }
  }
  if (!from_stdin)
    ::close(fd);
  size_t begin = 0;
  while (begin < text.size()) {
    auto end = text.find('\n', begin);
    if (end == std::string::npos)
      end = text.size();
    commands.emplace_back(text, begin, end - begin);
    begin = end + 1;
  }
  return std::nullopt;
}

// -- signals: the handler only writes to a pipe; a thread acts on it ----------

int signal_pipe[2] = {-1, -1};

extern "C" void on_signal(int sig) {
  auto saved = errno;
  auto byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(signal_pipe[1], &byte, 1);
  errno = saved;
}

bool install_signal_handlers() {
  if (::pipe2(signal_pipe, O_CLOEXEC) != 0)
    return false;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  return ::sigaction(SIGINT, &sa, nullptr) == 0 &&
         ::sigaction(SIGTERM, &sa, nullptr) == 0;
}

/// Terminates the process by `sig` with its default action, as a shell
/// expects from a program that was interrupted.
[[noreturn]] void die_by(int sig) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
  std::_Exit(128 + sig);
}

/// First SIGINT/SIGTERM: ask the runner to drain. Second: kill every
/// running command's process group and terminate. A zero byte ends it.
void watch_signals(caf::actor runner, std::atomic<int>& interrupted_by) {
  for (;;) {
    unsigned char byte = 0;
    auto n = ::read(signal_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || byte == 0)
      return;
    if (interrupted_by.exchange(byte) == 0) {
      caf::anon_send(runner, poolrun::interrupt_atom_v);
      continue;
    }
    auto killed = poolrun::kill_all_commands();
    auto text = "\npoolrun: aborted: killed " + std::to_string(killed) +
                " running commands\n";
    [[maybe_unused]] auto written =
        ::write(STDERR_FILENO, text.data(), text.size());
    die_by(byte);
  }
}

/// The pool's job: one command, on a local worker or a node's.
auto make_job(std::optional<caf::timespan> timeout,
              std::atomic<uint64_t>* runs = nullptr) {
  return [timeout, runs](const std::string& command) {
    if (runs != nullptr)
      ++*runs;
    return poolrun::run_job(command, timeout);
  };
}

std::string endpoint(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos)
    return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

/// `--join`: contributes `-j` workers to the poolrun serving at HOST:PORT
/// until it finishes (0), Ctrl-C (0, after the running commands), or the
/// pool cannot be reached for `--join-wait` (255).
int run_node(const poolrun::run_options& opts) {
  std::atomic<int> interrupted_by{0};
  std::atomic<uint64_t> runs{0};
  auto where = endpoint(opts.join_host, opts.join_port);
  int status = own_error;
  config cfg{true};
  caf::actor_system sys{cfg};
  // Log lines once joined; the first join's failures are reported below.
  auto joined = std::make_shared<std::atomic<bool>>(false);
  auto node_opts =
      pool::node_options{}
          .kind(pool::worker_kind::dedicated)
          .name("poolrun node")
          .join_timeout(
              std::min(opts.join_wait, caf::timespan{std::chrono::seconds(10)}))
          .reconnect(std::chrono::milliseconds(100), std::chrono::seconds(1))
          .give_up_after(opts.join_wait)
          .leave_when_pool_stops(true)
          .log([joined](pool::log_level, const std::string&,
                        const std::string& text) {
            if (*joined)
              std::fprintf(stderr, "poolrun: node: %s\n", text.c_str());
          });
  // Retries while the pool cannot be reached (it may not be up yet), for
  // at most --join-wait; a refused token ends it at once.
  auto deadline = std::chrono::steady_clock::now() + opts.join_wait;
  auto delay = std::chrono::milliseconds(100);
  caf::expected<caf::actor> node{caf::sec::request_timeout};
  for (;;) {
    node = pool::join_remote_pool(sys, opts.join_host, opts.join_port,
                                  opts.token, opts.jobs,
                                  make_job(opts.timeout, &runs), node_opts);
    if (node)
      break;
    auto err = node.error();
    if (err.category() == pool::remote_error_category)
      return fail("the pool at " + where +
                  " refused this node: wrong token (check --token or "
                  "POOLRUN_TOKEN; " +
                  pool::describe_remote(err) + ")");
    if (pool::is(err, pool::pool_errc::invalid_option))
      return fail("cannot join the pool at " + where + ": " +
                  pool::describe_remote(err));
    auto now = std::chrono::steady_clock::now();
    if (now + delay > deadline)
      return fail("cannot reach the pool at " + where + " within " +
                  pool::duration_text(opts.join_wait) +
                  " (--join-wait): " + pool::describe_remote(err));
    // Wait, but let Ctrl-C end the wait.
    pollfd fd{signal_pipe[0], POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(delay.count())) > 0)
      return 0; // interrupted before it joined
    delay = std::min(delay * 2, std::chrono::milliseconds(1000));
  }
  *joined = true;
  std::fprintf(stderr, "poolrun: joined the pool at %s with %zu workers\n",
               where.c_str(), opts.jobs);
  {
    caf::scoped_actor self{sys};
    self->monitor(*node);
    std::thread watcher{watch_signals, caf::actor_cast<caf::actor>(self),
                        std::ref(interrupted_by)};
    auto done = false;
    while (!done)
      self->receive(
          [&](caf::down_msg& msg) {
            done = true;
            if (msg.reason) {
              std::fprintf(stderr, "poolrun: lost the pool at %s: %s\n",
                           where.c_str(),
                           pool::describe_remote(msg.reason).c_str());
              status = own_error;
            } else {
              status = 0;
            }
          },
          [&](poolrun::interrupt_atom) {
            done = true;
            std::fprintf(stderr,
                         "poolrun: interrupted: leaving the pool once the "
                         "running commands finish (press Ctrl-C again to "
                         "kill them)\n");
            // Running commands finish first; a second Ctrl-C kills them.
            if (auto err =
                    pool::leave_remote_pool(sys, *node, std::chrono::hours(1)))
              std::fprintf(stderr, "poolrun: leaving the pool: %s\n",
                           pool::describe_remote(err).c_str());
            status = 0;
          });
    unsigned char stop = 0;
    [[maybe_unused]] auto n = ::write(signal_pipe[1], &stop, 1);
    watcher.join();
  }
  std::fprintf(stderr, "poolrun: %llu commands ran on this node\n",
               static_cast<unsigned long long>(runs.load()));
  return status;
}

/// `--serve`: publishes `pool` behind a gatekeeper; returns it, or nothing
/// after printing why not.
std::optional<caf::actor> serve(caf::actor_system& sys, const caf::actor& pool,
                                const poolrun::run_options& opts) {
  using job_type = decltype(make_job(opts.timeout));
  auto remote =
      pool::remote_options{}
          .token(opts.token)
          .bind_address(opts.bind_address)
          .port(*opts.serve_port)
          .name("poolrun")
          .log([](pool::log_level level, const std::string&,
                  const std::string& text) {
            if (level != pool::log_level::debug)
              std::fprintf(stderr, "poolrun: serve: %s\n", text.c_str());
          });
  auto why = [&](const caf::error& err) {
    fail("cannot serve on " + endpoint(opts.bind_address, *opts.serve_port) +
         ": " + pool::describe_remote(err));
    return std::nullopt;
  };
  if (auto err = pool::check_sendable<job_type>(sys))
    return why(err);
  auto gatekeeper = pool::spawn_gatekeeper(sys, pool, remote);
  if (!gatekeeper)
    return why(gatekeeper.error());
  auto port = pool::publish_gatekeeper(sys, *gatekeeper, remote);
  if (!port)
    return why(port.error());
  // On stderr: standard output carries the commands' output only.
  std::fprintf(stderr, "poolrun: serving on %s\n",
               endpoint(opts.bind_address, *port).c_str());
  return *gatekeeper;
}

/// Waits (at most 5 s) until `gatekeeper` ended, then a grace period: its
/// end tells the joined nodes that the pool stopped (so they exit 0 rather
/// than reconnect), and that message must leave before the actor system's
/// shutdown closes the connections. CAF 0.17 offers no way to wait for it
/// (no node monitoring), hence the fixed grace.
void await_end(caf::actor_system& sys, const caf::actor& gatekeeper) {
  caf::scoped_actor self{sys};
  self->monitor(gatekeeper);
  self->receive([](caf::down_msg&) {},
                caf::after(std::chrono::seconds(5)) >> [] {});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

} // namespace

int main(int argc, char** argv) {
  auto parsed = poolrun::parse_arguments(argc, argv);
  if (!parsed.error.empty())
    return fail(parsed.error + " (see poolrun --help)");
  auto& opts = parsed.options;
  if (opts.help) {
    std::fputs(poolrun::usage().c_str(), stdout);
    return 0;
  }
  if (auto err = poolrun::check_token(opts, std::getenv("POOLRUN_TOKEN"));
      !err.empty())
    return fail(err);
  if (opts.joining()) {
    if (!install_signal_handlers())
      return fail(std::string{"cannot install signal handlers: "} +
                  std::strerror(errno));
    return run_node(opts);
  }
  std::vector<std::string> commands;
  if (auto err = read_commands(opts.input, commands))
    return fail(*err);
  auto out = std::make_shared<poolrun::report>(opts.keep_order, opts.bar);
  // A journaled run adds to the joblog of the runs it resumes.
  if (!opts.joblog.empty())
    if (auto err = out->open_joblog(opts.joblog, !opts.journal.empty()))
      return fail(*err);
  if (!install_signal_handlers())
    return fail(std::string{"cannot install signal handlers: "} +
                std::strerror(errno));
  std::atomic<int> interrupted_by{0};
  int status = own_error;
  {
    config cfg{opts.serving()};
    caf::actor_system sys{cfg};
    auto job = make_job(opts.timeout);
    auto pool_opts =
        pool::pool_options{}
            .kind(pool::worker_kind::dedicated)
            .workers(opts.jobs)
            .name("poolrun")
            .max_attempts(opts.retries + 1)
            .backoff(opts.retry_delay,
                     std::max(opts.retry_delay,
                              caf::timespan{std::chrono::seconds(30)}))
            .jitter(0.2)
            .log([](pool::log_level level, const std::string&,
                    const std::string& text) {
              if (level == pool::log_level::warning ||
                  level == pool::log_level::error)
                std::fprintf(stderr, "poolrun: pool: %s\n", text.c_str());
            });
    if (!opts.journal.empty())
      // Synchronous "normal": a recorded outcome survives a crash of
      // poolrun (not a power loss); finished commands match forever.
      pool_opts.durable(opts.journal, pool::sqlite_sync::normal)
          .unique_window(caf::timespan::max());
    auto pool = pool::spawn_pool(sys, job, pool_opts);
    if (!pool) {
      if (!opts.journal.empty())
        return fail("cannot open journal '" + opts.journal +
                    "': " + pool::describe(pool.error()));
      return fail("cannot start the pool: " + pool::describe(pool.error()));
    }
    std::optional<caf::actor> gatekeeper;
    if (opts.serving()) {
      gatekeeper = serve(sys, *pool, opts);
      if (!gatekeeper) {
        caf::anon_send_exit(*pool, caf::exit_reason::user_shutdown);
        return own_error;
      }
    }
    auto exit_status = std::make_shared<std::promise<int>>();
    auto result = exit_status->get_future();
    poolrun::runner_config rcfg{opts, std::move(commands), *pool, out,
                                exit_status};
    // Detached: it writes to stdout, which may block on a slow reader.
    auto runner = sys.spawn<caf::detached>(poolrun::runner, std::move(rcfg));
    std::thread watcher{watch_signals, runner, std::ref(interrupted_by)};
    status = result.get();
    unsigned char stop = 0;
    [[maybe_unused]] auto n = ::write(signal_pipe[1], &stop, 1);
    watcher.join();
    if (gatekeeper)
      await_end(sys, *gatekeeper);
  } // the actor system waits for the pool's workers here
  if (auto sig = interrupted_by.load(); sig != 0)
    die_by(sig);
  return status;
}
