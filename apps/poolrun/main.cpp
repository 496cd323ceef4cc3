// poolrun: runs a command for every input, several at once, on a pool of
// workers (a drop-in for GNU parallel's common options).
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <pool/all.hpp>
#include <pool/http.hpp>

#include "cli.hpp"
#include "console.hpp"
#include "enqueue.hpp"
#include "process.hpp"
#include "profiles.hpp"
#include "run_setup.hpp"
#include "runner.hpp"
#include "secrets.hpp"
#include "semaphore.hpp"
#include "type_ids.hpp"

namespace {

struct config : caf::actor_system_config {
  config() {
    pool::configure(*this);
    add_message_types<caf::id_block::poolrun>();
    add_error_category(caf::atom("poolrun"), poolrun::render_poolrun_error);
    // The same text on the page, /api/stats, pooltop and the logs.
    pool::describe_category(caf::atom("poolrun"),
                            poolrun::render_poolrun_error);
    // --timeout kills count as timed-out attempts in the pool's figures.
    pool::count_as_timeout(
        caf::atom("poolrun"),
        static_cast<uint8_t>(poolrun::poolrun_errc::timed_out));
    set("logger.verbosity", caf::atom("quiet"));
    // Two scheduler threads, not CAF's max(cores, 4): poolrun's scheduled
    // actors are the shepherd, the queue and the store, and a message from
    // a worker's thread to an idle scheduler thread is a futex wake-up
    // (more threads, more of them asleep). Two keep one free while the
    // other waits on a journal or queue write. Per `true` command at -j2,
    // 8 alternating rounds: 647 us median with 4 threads, 617 with 2, 623
    // with 1.
    set("scheduler.max-threads", size_t{2});
  }
};

int fail(const std::string& why) {
  std::fprintf(stderr, "%s%s\n", poolrun::console::prefix().c_str(),
               why.c_str());
  return poolrun::own_error;
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
  // A command that exits before reading its --pipe block must not end
  // poolrun: its write gets EPIPE instead (commands start with SIGPIPE at
  // its default; standard output closed ends poolrun by SIGPIPE still,
  // see console.cpp).
  std::signal(SIGPIPE, SIG_IGN);
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

/// First SIGINT/SIGTERM: ask the runner to stop starting commands. Second:
/// kill every running command and terminate. A zero byte ends it.
void watch_signals(caf::actor runner, std::atomic<int>& interrupted_by,
                   std::shared_ptr<poolrun::slot_table> slots) {
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
    if (slots)
      slots->close(); // remote commands die with their connection
    auto text = "\n" + poolrun::console::prefix() + "aborted: killed " +
                std::to_string(killed) + " running commands\n";
    [[maybe_unused]] auto written =
        ::write(STDERR_FILENO, text.data(), text.size());
    die_by(byte);
  }
}

} // namespace

int main(int argc, char** argv) {
  poolrun::console::name_program(argc > 0 ? argv[0] : "poolrun");
  // $PARALLEL holds default options, as for GNU parallel.
  auto words =
      poolrun::with_environment_options(argc, argv, std::getenv("PARALLEL"));
  auto parse = [&words] {
    std::vector<const char*> args;
    for (auto& word : words)
      args.push_back(word.c_str());
    return poolrun::parse_command_line(static_cast<int>(args.size()),
                                       args.data());
  };
  auto parsed = parse();
  if (!parsed.profiles.empty()) {
    // -J: the profiles' options go first (then $PARALLEL's, then the
    // command line's), as in GNU parallel: a later one wins.
    std::string error;
    auto extra = poolrun::profile_words(parsed.profiles, error);
    if (!error.empty())
      return fail(error);
    words.insert(words.begin() + 1, extra.begin(), extra.end());
    parsed = parse();
  }
  if (!parsed.error.empty())
    // GNU parallel's own words (invoked as `parallel`) stand alone.
    return fail(parsed.error.rfind("Error: ", 0) == 0
                    ? parsed.error
                    : parsed.error + " (see poolrun --help)");
  auto& opts = parsed.options;
  if (opts.help) {
    std::fputs(poolrun::usage().c_str(), stdout);
    return 0;
  }
  if (opts.version) {
    std::fputs(poolrun::version_text().c_str(), stdout);
    return 0;
  }
  if (opts.semaphore) { // before any thread starts: it forks
    std::string error;
    auto status = poolrun::run_semaphore(
        opts, opts.jobs.slots(std::max(1U, std::thread::hardware_concurrency())),
        error);
    return error.empty() ? status : fail(error);
  }
  // Before any thread starts: threads and commands inherit the niceness.
  if (opts.nice && ::setpriority(PRIO_PROCESS, 0, *opts.nice) != 0)
    return fail("--nice " + std::to_string(*opts.nice) + ": " +
                std::strerror(errno));
  // Before any thread starts: as GNU parallel, --tmpdir is $TMPDIR for
  // poolrun's files and for the commands.
  if (!opts.tmpdir.empty()) {
    struct stat st;
    if (::stat(opts.tmpdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        ::access(opts.tmpdir.c_str(), W_OK | X_OK) != 0)
      return fail("--tmpdir " + opts.tmpdir +
                  ": not a folder poolrun can write to; give an existing, "
                  "writable folder");
    ::setenv("TMPDIR", opts.tmpdir.c_str(), 1);
  }
  // Before any thread starts: it reads and clears the environment.
  auto http_token =
      poolrun::take_http_token(opts.http_token_file, !opts.http.empty());
  if (!http_token)
    return fail(pool::describe(http_token.error()));
  poolrun::run_setup setup;
  if (auto err = setup.prepare(opts); !err.empty())
    return fail(err);
  if (!install_signal_handlers())
    return fail(std::string{"cannot install signal handlers: "} +
                std::strerror(errno));
  std::atomic<int> interrupted_by{0};
  int status = poolrun::own_error;
  {
    config cfg;
    caf::actor_system sys{cfg};
    if (opts.enqueue && !opts.dry_run) {
      status = poolrun::enqueue_only(sys, setup);
      setup.finish();
      return status;
    }
    caf::actor pool;
    std::unique_ptr<pool::http_endpoint> http;
    if (!opts.dry_run) {
      std::string why;
      pool = setup.spawn_pool(sys, why);
      if (!pool)
        return fail(why);
      if (!opts.http.empty()) {
        pool::http_options hopts;
        pool::parse_http_address(opts.http, hopts); // checked by the CLI
        hopts.token = *http_token;
        auto ep = pool::serve_http(sys, {{"poolrun", pool}}, hopts);
        if (!ep)
          return fail(pool::describe(ep.error()));
        http = std::move(*ep);
        std::fprintf(stderr, "%sserving %s/ (metrics: /metrics)\n",
                     poolrun::console::prefix().c_str(), http->url().c_str());
      }
    }
    // --_parset: an array's opening (each job's output follows it).
    auto parset = opts.parset;
    using parset_mode = poolrun::run_options::parset_mode;
    if (parset == parset_mode::array || parset == parset_mode::assoc)
      poolrun::console::write(1, opts.parset_names.front() + "=(");
    auto exit_status = std::make_shared<std::promise<int>>();
    auto result = exit_status->get_future();
    poolrun::runner_config rcfg;
    rcfg.options = opts;
    rcfg.pool = pool;
    rcfg.input = setup.input;
    rcfg.slots = setup.slots;
    rcfg.workers = setup.workers;
    rcfg.resume = setup.resume;
    rcfg.exit_status = exit_status;
    pool = nullptr;
    // On the scheduler, beside the shepherd: an outcome goes from the
    // shepherd to the runner and the next submit back without waking a
    // thread (a detached runner cost a futex wake-up each way: 647 against
    // 584 us per `true` command at -j2, 6 alternating rounds). Its writes
    // to standard output may block; then they hold one of the two
    // scheduler threads, the other keeps the shepherd, the queue and the
    // store going (work stealing), and outcomes wait in the runner's
    // mailbox as they waited for a detached one.
    auto runner = sys.spawn(poolrun::runner, std::move(rcfg));
    std::thread watcher{watch_signals, runner, std::ref(interrupted_by),
                        setup.slots};
    runner = nullptr;
    status = result.get();
    if (parset != parset_mode::none) // the shell code ends with the status
      poolrun::console::write(
          1, std::string{parset == parset_mode::vars ? "" : ")\n"} +
                 "\nreturn " + std::to_string(status));
    unsigned char stop = 0;
    [[maybe_unused]] auto n = ::write(signal_pipe[1], &stop, 1);
    watcher.join();
    http.reset();
    setup.finish();
  } // the actor system waits for the pool's workers here
  if (auto sig = interrupted_by.load(); sig != 0)
    die_by(sig);
  return status;
}
