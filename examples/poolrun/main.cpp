// poolrun: runs shell commands from input lines in parallel on a pool.
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <pool/all.hpp>

#include "arguments.hpp"
#include "job.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "type_ids.hpp"

namespace {

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this); // the pool's block first, then ours after it
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
    config cfg;
    caf::actor_system sys{cfg};
    auto job = [timeout = opts.timeout](const std::string& command) {
      return poolrun::run_job(command, timeout);
    };
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
  } // the actor system waits for the pool's workers here
  if (auto sig = interrupted_by.load(); sig != 0)
    die_by(sig);
  return status;
}
