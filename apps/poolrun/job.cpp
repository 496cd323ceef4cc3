// Runs one command in its own process group: fork/exec, pipes, deadline.
#include "job.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <caf/message.hpp>

#include <pool/errors.hpp>
#include <pool/work_record.hpp>

namespace poolrun {

namespace {

using steady = std::chrono::steady_clock;

// -- the process groups of running commands, for aborting ---------------------

std::mutex groups_mtx;
std::set<pid_t> running_groups;
std::atomic<bool> aborting{false};

/// An attempt that must not report (poolrun is aborting) waits here until
/// the process terminates.
[[noreturn]] void wait_for_process_end() {
  for (;;)
    std::this_thread::sleep_for(std::chrono::hours(1));
}

void add_group(pid_t pgid) {
  std::lock_guard<std::mutex> guard{groups_mtx};
  running_groups.insert(pgid);
  if (aborting) // forked after kill_all_commands looked
    ::kill(-pgid, SIGKILL);
}

void remove_group(pid_t pgid) {
  std::lock_guard<std::mutex> guard{groups_mtx};
  running_groups.erase(pgid);
}

// -- helpers ------------------------------------------------------------------

int64_t wall_now() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(system_clock::now().time_since_epoch())
      .count();
}

/// A failure of poolrun itself to start the command, reported like a shell
/// that cannot run it.
job_result cannot_start(job_result res, const char* what) {
  res.exit_code = 127;
  res.err =
      std::string{"poolrun: "} + what + ": " + std::strerror(errno) + "\n";
  return res;
}

/// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(const char* command, int out_fd, int err_fd) {
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  auto devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0)
    ::dup2(devnull, STDIN_FILENO);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  // Nothing else of poolrun's (journal, other commands' pipes) leaks in.
  ::syscall(SYS_close_range, 3U, ~0U, 0U);
  ::execl("/bin/sh", "sh", "-c", command, static_cast<char*>(nullptr));
  ::_exit(127);
}

/// Reads what `fd` has into `dst`; clears `open` at end of file.
void read_some(int fd, std::string& dst, bool& open) {
  char buf[65536];
  auto n = ::read(fd, buf, sizeof(buf));
  if (n > 0)
    dst.append(buf, static_cast<size_t>(n));
  else if (n == 0 || (errno != EINTR && errno != EAGAIN))
    open = false;
}

/// Reads what is left in `fd` without waiting for more: a process the
/// command left in the background may keep the pipe open.
void read_rest(int fd, std::string& dst) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  bool open = true;
  while (open) {
    auto before = dst.size();
    read_some(fd, dst, open);
    if (dst.size() == before)
      break; // EAGAIN (or end of file)
  }
}

/// Whether `pid` has terminated, without reaping it: until it is reaped its
/// pid (and so its process group id) cannot be reused.
bool has_exited(pid_t pid) {
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  return ::waitid(P_PID, static_cast<id_t>(pid), &info,
                  WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

} // namespace

job_result run_command(const std::string& command,
                       std::optional<caf::timespan> timeout) {
  job_result res;
  res.command = command;
  if (aborting)
    wait_for_process_end();
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    return cannot_start(std::move(res), "cannot create a pipe");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return cannot_start(std::move(res), "cannot create a pipe");
  }
  auto start = steady::now();
  res.started_at = wall_now();
  auto pid = ::fork();
  if (pid == 0)
    exec_child(command.c_str(), out_pipe[1], err_pipe[1]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return cannot_start(std::move(res), "cannot fork");
  }
  ::setpgid(pid, pid); // also here: no window in which the group is missing
  add_group(pid);
  // A pidfd becomes readable when the child exits; without one (old
  // kernels), look every 10 ms.
  auto pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U));
  std::optional<steady::time_point> deadline;
  if (timeout)
    deadline = start + *timeout;
  bool out_open = true;
  bool err_open = true;
  for (;;) {
    pollfd fds[3];
    nfds_t count = 0;
    if (out_open)
      fds[count++] = pollfd{out_pipe[0], POLLIN, 0};
    if (err_open)
      fds[count++] = pollfd{err_pipe[0], POLLIN, 0};
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
    ::poll(fds, count, wait_ms); // EINTR: just look again
    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents == 0 || fds[i].fd == pidfd)
        continue;
      if (fds[i].fd == out_pipe[0])
        read_some(out_pipe[0], res.out, out_open);
      else
        read_some(err_pipe[0], res.err, err_open);
    }
    if (has_exited(pid))
      break;
    if (deadline && !res.timed_out && steady::now() >= *deadline) {
      // The whole group: the shell and everything it started.
      res.timed_out = true;
      ::kill(-pid, SIGKILL);
    }
  }
  read_rest(out_pipe[0], res.out);
  read_rest(err_pipe[0], res.err);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
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
  if (aborting) // killed by the abort: no report, the process is ending
    wait_for_process_end();
  if (WIFEXITED(status)) {
    res.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res.exit_code = 0;
    res.signal = WTERMSIG(status);
  }
  if (res.timed_out)
    res.exit_code = -1;
  return res;
}

caf::expected<job_result> run_job(const std::string& command,
                                  std::optional<caf::timespan> timeout) {
  auto res = run_command(command, timeout);
  if (!res.failed())
    return res;
  auto code =
      res.timed_out ? poolrun_errc::timed_out : poolrun_errc::command_failed;
  return caf::make_error(code, std::move(res));
}

size_t kill_all_commands() {
  std::lock_guard<std::mutex> guard{groups_mtx};
  aborting = true;
  for (auto pgid : running_groups)
    ::kill(-pgid, SIGKILL);
  return running_groups.size();
}

std::string render_poolrun_error(uint8_t code, caf::atom_value,
                                 const caf::message& context) {
  std::string result = "poolrun.";
  switch (static_cast<poolrun_errc>(code)) {
    case poolrun_errc::command_failed:
      result += "command_failed";
      break;
    case poolrun_errc::timed_out:
      result += "timed_out";
      break;
    default:
      result += "unknown_error";
  }
  if (context.match_elements<job_result>()) {
    auto& res = context.get_as<job_result>(0);
    if (res.timed_out)
      result += ": killed at its deadline";
    else if (res.signal != 0)
      result += ": signal " + std::to_string(res.signal);
    else
      result += ": exit status " + std::to_string(res.exit_code);
  }
  return result;
}

std::optional<job_result> result_of(const caf::error& err) {
  if (!err)
    return std::nullopt;
  if (err.category() == caf::atom("poolrun")) {
    if (err.context().match_elements<job_result>())
      return err.context().get_as<job_result>(0);
    return std::nullopt;
  }
  auto history = pool::attempt_history(err);
  if (history.empty())
    return std::nullopt;
  return result_of(history.back().reason);
}

} // namespace poolrun
