// Runs one process: posix_spawn into its own group, poll its pipes, reap.
#include "process.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_set>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.hpp"

extern char** environ;

namespace poolrun {

namespace {

using steady = std::chrono::steady_clock;

// -- running process groups and the start gate --------------------------------

enum gate_state : int { open_gate, parking, released, aborting };

std::mutex groups_mtx;
std::unordered_set<pid_t> running_groups;
std::atomic<int> gate{open_gate};
std::mutex park_mtx;
std::condition_variable park_cv;
std::atomic<size_t> running_attempts{0};
std::atomic<uint64_t> ended_attempts{0};

[[noreturn]] void wait_forever() {
  for (;;)
    std::this_thread::sleep_for(std::chrono::hours(1));
}

void add_group(pid_t pgid) {
  std::lock_guard<std::mutex> guard{groups_mtx};
  running_groups.insert(pgid);
  if (gate.load() == aborting) // spawned after kill_all_commands looked
    ::kill(-pgid, SIGKILL);
}

void remove_group(pid_t pgid) {
  std::lock_guard<std::mutex> guard{groups_mtx};
  running_groups.erase(pgid);
}

// -- environment -------------------------------------------------------------

/// poolrun's environment without the variables set per command.
const std::vector<char*>& base_environment() {
  static const std::vector<char*> result = [] {
    std::vector<char*> env;
    for (auto p = environ; p != nullptr && *p != nullptr; ++p) {
      std::string_view entry{*p};
      if (entry.rfind("PARALLEL_SEQ=", 0) == 0 ||
          entry.rfind("PARALLEL_JOBSLOT=", 0) == 0 ||
          entry.rfind("PARALLEL_PID=", 0) == 0)
        continue;
      env.push_back(*p);
    }
    return env;
  }();
  return result;
}

int64_t wall_now() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(system_clock::now().time_since_epoch())
      .count();
}

/// Whether `pid` has terminated, without reaping it (until it is reaped its
/// pid, and so its group id, cannot be reused).
bool has_exited(pid_t pid) {
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  return ::waitid(P_PID, static_cast<id_t>(pid), &info,
                  WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

struct pipe_pair {
  int fd[2] = {-1, -1};
  bool open() {
    return ::pipe2(fd, O_CLOEXEC) == 0;
  }
  void close_both() {
    for (auto& x : fd)
      if (x >= 0) {
        ::close(x);
        x = -1;
      }
  }
};

} // namespace

pid_t spawn_process(const std::vector<std::string>& args,
                    const std::vector<std::string>& env, int in_fd,
                    int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  if (in_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, in_fd, STDIN_FILENO);
  else
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                     O_RDONLY, 0);
  if (out_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  if (err_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  // Nothing else of poolrun's (journal, other commands' pipes) leaks in.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                      POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& arg : args)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  auto& base = base_environment();
  std::vector<char*> envp;
  envp.reserve(base.size() + env.size() + 1);
  envp.insert(envp.end(), base.begin(), base.end());
  for (auto& entry : env)
    envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  auto rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(),
                           envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -rc;
}

launch_outcome run_process(const launch_spec& spec) {
  launch_outcome outcome;
  auto& res = outcome.result;
  bool capture_out = spec.mode != output_mode::ungroup;
  pipe_pair in_pipe;
  pipe_pair out_pipe;
  pipe_pair err_pipe;
  auto failed_pipe = [&] {
    outcome.spawn_error = errno;
    in_pipe.close_both();
    out_pipe.close_both();
    err_pipe.close_both();
    return outcome;
  };
  if (spec.input != nullptr && !in_pipe.open())
    return failed_pipe();
  if (capture_out && (!out_pipe.open() || !err_pipe.open()))
    return failed_pipe();
  // Remote slots always capture standard error: the marker is on it.
  if (!capture_out && spec.strip_marker && !err_pipe.open())
    return failed_pipe();
  auto start = steady::now();
  res.started_at = wall_now();
  auto pid = spawn_process(spec.argv, spec.env, in_pipe.fd[0], out_pipe.fd[1],
                           err_pipe.fd[1]);
  for (auto fd : {in_pipe.fd[0], out_pipe.fd[1], err_pipe.fd[1]})
    if (fd >= 0)
      ::close(fd);
  in_pipe.fd[0] = out_pipe.fd[1] = err_pipe.fd[1] = -1;
  if (pid < 0) {
    outcome.spawn_error = -pid;
    in_pipe.close_both();
    out_pipe.close_both();
    err_pipe.close_both();
    return outcome;
  }
  add_group(pid);
  stream_capture out{1, spec.mode, spec.on_lines};
  stream_capture err{2, spec.mode, spec.on_lines};
  err.strip_marker(spec.strip_marker);
  if (!capture_out)
    err.pass_through(STDERR_FILENO);
  int in_fd = in_pipe.fd[1];
  size_t in_done = 0;
  bool broken_pipe = false;
  if (in_fd >= 0) {
    ::fcntl(in_fd, F_SETFL, ::fcntl(in_fd, F_GETFL) | O_NONBLOCK);
    if (spec.input->empty()) {
      ::close(in_fd);
      in_fd = -1;
    }
  }
  // A pidfd becomes readable when the child exits; without one (old
  // kernels), look every 10 ms.
  auto pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U));
  std::optional<steady::time_point> deadline;
  if (spec.timeout)
    deadline = start + *spec.timeout;
  int out_fd = out_pipe.fd[0];
  int err_fd = err_pipe.fd[0];
  bool marker_seen = false;
  for (;;) {
    pollfd fds[4];
    nfds_t count = 0;
    if (out_fd >= 0)
      fds[count++] = pollfd{out_fd, POLLIN, 0};
    if (err_fd >= 0)
      fds[count++] = pollfd{err_fd, POLLIN, 0};
    if (in_fd >= 0)
      fds[count++] = pollfd{in_fd, POLLOUT, 0};
    if (pidfd >= 0)
      fds[count++] = pollfd{pidfd, POLLIN, 0};
    int wait_ms = pidfd >= 0 ? -1 : 10;
    if (deadline && !res.timed_out) {
      using std::chrono::ceil;
      using std::chrono::milliseconds;
      auto left = ceil<milliseconds>(*deadline - steady::now()).count();
      left = std::max<decltype(left)>(left, 0);
      if (wait_ms < 0 || left < wait_ms)
        wait_ms = static_cast<int>(left);
    }
    bool exited = false;
    if (::poll(fds, count, wait_ms) > 0) {
      for (nfds_t i = 0; i < count; ++i) {
        if (fds[i].revents == 0)
          continue;
        if (fds[i].fd == pidfd) {
          exited = true;
        } else if (fds[i].fd == out_fd) {
          if (!out.read_from(out_fd))
            out_fd = -1;
        } else if (fds[i].fd == err_fd) {
          if (!err.read_from(err_fd))
            err_fd = -1;
          if (!marker_seen && err.marker_pgid() != 0) {
            marker_seen = true;
            if (spec.on_marker)
              spec.on_marker(err.marker_pgid());
          }
        } else if (fds[i].fd == in_fd) {
          auto n = ::write(in_fd, spec.input->data() + in_done,
                           spec.input->size() - in_done);
          if (n > 0)
            in_done += static_cast<size_t>(n);
          // (SIGPIPE is ignored: a command that stops reading ends its
          // block here, not poolrun.)
          if (n < 0 && errno == EPIPE)
            broken_pipe = true;
          if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
              in_done == spec.input->size()) {
            ::close(in_fd);
            in_fd = -1;
          }
        }
      }
    }
    if ((exited || pidfd < 0 || (out_fd < 0 && err_fd < 0)) &&
        has_exited(pid))
      break;
    if (deadline && !res.timed_out && steady::now() >= *deadline) {
      // The whole group: the shell and everything it started.
      res.timed_out = true;
      ::kill(-pid, SIGKILL);
      if (spec.on_timeout)
        spec.on_timeout(err.marker_pgid());
    }
  }
  // What is left, without waiting for more: a process the command left in
  // the background may keep the pipes open.
  if (out_fd >= 0)
    out.read_rest(out_fd);
  if (err_fd >= 0)
    err.read_rest(err_fd);
  out_pipe.close_both();
  err_pipe.close_both();
  if (in_fd >= 0)
    ::close(in_fd);
  if (pidfd >= 0)
    ::close(pidfd);
  remove_group(pid); // before reaping: the pid is still ours
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    // retry
  }
  res.runtime = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    steady::now() - start)
                    .count();
  if (gate.load() == aborting) // killed by the abort: no report
    wait_forever();
  if (WIFEXITED(status)) {
    res.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res.exit_code = 0;
    res.signal = WTERMSIG(status);
  }
  // As GNU parallel: a command that exits before reading its whole block
  // failed by SIGPIPE (the feeding end of its pipe was cut).
  if (broken_pipe && spec.unread_input_fails && res.signal == 0)
    res.signal = SIGPIPE;
  if (res.timed_out)
    res.exit_code = -1;
  res.sent = in_done;
  out.finish();
  err.finish();
  res.received = out.total();
  outcome.remote_pgid = err.marker_pgid();
  size_t held_bytes = 0;
  res.out = out.take_memory(held_bytes);
  res.err = err.take_memory(held_bytes);
  auto out_spool = out.take_spool();
  auto err_spool = err.take_spool();
  if (held_bytes > 0 || out_spool >= 0 || err_spool >= 0) {
    // Owned by the result from here: released with its last copy.
    res.held = std::make_shared<held_output>();
    res.held->bytes = held_bytes;
    res.held->out_fd = out_spool;
    res.held->err_fd = err_spool;
  }
  return outcome;
}

// -- stopping ------------------------------------------------------------------

bool attempt_begins() {
  // Counted first: a runner that sees no running attempt and no open
  // gate knows none is between the two.
  ++running_attempts;
  auto state = gate.load();
  if (state == open_gate)
    return true;
  --running_attempts;
  if (state == aborting)
    wait_forever();
  std::unique_lock<std::mutex> guard{park_mtx};
  park_cv.wait(guard, [] { return gate.load() != parking; });
  if (gate.load() == aborting)
    wait_forever();
  return false;
}

void attempt_done() {
  ++ended_attempts;
  --running_attempts;
}

size_t attempts_running() {
  return running_attempts.load();
}

uint64_t attempts_ended() {
  return ended_attempts.load();
}

void stop_starting() {
  int expected = open_gate;
  gate.compare_exchange_strong(expected, parking);
}

void release_parked() {
  {
    std::lock_guard<std::mutex> guard{park_mtx};
    int expected = parking;
    if (!gate.compare_exchange_strong(expected, released)) {
      expected = open_gate;
      gate.compare_exchange_strong(expected, released);
    }
  }
  park_cv.notify_all();
}

size_t signal_all_commands(int sig) {
  std::lock_guard<std::mutex> guard{groups_mtx};
  for (auto pgid : running_groups)
    ::kill(-pgid, sig);
  return running_groups.size();
}

size_t kill_all_commands() {
  {
    std::lock_guard<std::mutex> guard{park_mtx};
    gate = aborting;
  }
  park_cv.notify_all();
  return signal_all_commands(SIGKILL);
}

} // namespace poolrun
