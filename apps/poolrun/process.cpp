// Runs one process: spawned into its own group, its output captured in
// files (read when it ends) or pipes (polled), reaped.
#include "process.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_set>

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.hpp"

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

/// Whether $TMPDIR (else /tmp) is a tmpfs, looked at once. There an
/// unlinked file costs what a pipe costs; on ext4 making and dropping two
/// files per command cost more than the pipes and the polls they save
/// (poolrun's own CPU per `true` command, -j2: pipes 239-251 us, files in
/// /dev/shm 211-228 us, files in an ext4 /tmp 214-328 us), and output
/// beyond 1 MiB is better spooled to the disk by poolrun.
bool temp_in_memory() {
  static const bool result = [] {
    const char* dir = std::getenv("TMPDIR");
    if (dir == nullptr || *dir == '\0')
      dir = "/tmp";
    struct statfs st;
    return ::statfs(dir, &st) == 0 &&
           static_cast<unsigned long>(st.f_type) == TMPFS_MAGIC;
  }();
  return result;
}

/// Waits until `pid` has terminated, without reaping it.
void wait_for_exit(pid_t pid) {
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) !=
             0 &&
         errno == EINTR) {
    // retry
  }
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

launch_outcome run_process(const launch_spec& spec) {
  launch_outcome outcome;
  auto& res = outcome.result;
  bool capture_out = spec.mode != output_mode::ungroup;
  // --group (no remote marker to watch for) with $TMPDIR in memory:
  // output goes to two unlinked files there, read once the command has
  // ended, as GNU parallel keeps it. No pipe to poll while it runs: the
  // worker sleeps until the command exits (one wake-up, not three), and a
  // command that writes nothing costs no read at all. Else (--line-buffer,
  // -u, remote slots, $TMPDIR on a disk): pipes.
  bool to_files = spec.mode == output_mode::group && !spec.strip_marker &&
                  temp_in_memory();
  int out_file = -1;
  int err_file = -1;
  auto close_files = [&] {
    for (auto* fd : {&out_file, &err_file})
      if (*fd >= 0) {
        ::close(*fd);
        *fd = -1;
      }
  };
  if (to_files) {
    out_file = open_spool_file();
    err_file = out_file >= 0 ? open_spool_file() : -1;
    if (err_file < 0) { // (no room in $TMPDIR: pipes after all)
      close_files();
      to_files = false;
    }
  }
  pipe_pair in_pipe;
  pipe_pair out_pipe;
  pipe_pair err_pipe;
  auto failed_pipe = [&] {
    outcome.spawn_error = errno;
    close_files();
    in_pipe.close_both();
    out_pipe.close_both();
    err_pipe.close_both();
    return outcome;
  };
  if (spec.input != nullptr && !in_pipe.open())
    return failed_pipe();
  if (capture_out && !to_files && (!out_pipe.open() || !err_pipe.open()))
    return failed_pipe();
  // Remote slots always capture standard error: the marker is on it.
  if (!capture_out && spec.strip_marker && !err_pipe.open())
    return failed_pipe();
  // The block goes into the pipe before the command starts, as far as the
  // pipe takes it without waiting: a command that exits without reading a
  // block that fits has not failed (GNU parallel writes it at once too);
  // one that leaves more unread fails by SIGPIPE below, as there.
  size_t in_done = 0;
  if (in_pipe.fd[1] >= 0) {
    auto fd = in_pipe.fd[1];
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (!spec.input->empty()) {
      auto n = ::write(fd, spec.input->data(), spec.input->size());
      if (n > 0)
        in_done = static_cast<size_t>(n);
    }
  }
  auto start = steady::now();
  res.started_at = wall_now();
  auto pid = spawn_process(spec.argv, spec.env, in_pipe.fd[0],
                           to_files ? out_file : out_pipe.fd[1],
                           to_files ? err_file : err_pipe.fd[1]);
  if (in_pipe.fd[0] >= 0)
    ::close(in_pipe.fd[0]);
  in_pipe.fd[0] = -1;
  if (pid < 0) {
    outcome.spawn_error = -pid;
    close_files();
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
  bool broken_pipe = false;
  if (in_fd >= 0 && in_done == spec.input->size()) {
    ::close(in_fd); // all of it in the pipe (or nothing to give)
    in_fd = -1;
  }
  std::optional<steady::time_point> deadline;
  if (spec.timeout)
    deadline = start + *spec.timeout;
  // Nothing to feed, read or watch the clock for: wait for the exit.
  bool plain_wait = to_files && in_fd < 0 && !deadline;
  // Else a pidfd, readable when the child exits; without one (old
  // kernels), look every 10 ms.
  auto pidfd = plain_wait
                   ? -1
                   : static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U));
  // With a pidfd, poolrun keeps its own copies of the pipes' writing ends
  // until the command has exited: a command ending wakes the worker once
  // (the pidfd), not once per pipe closing and again for the exit (1.7
  // wake-ups per `true` command measured). What is in the pipes then is
  // read without waiting, as for a process left in the background.
  // Without one, the pipes' end is the first sign of the exit.
  for (auto* fd : {&out_pipe.fd[1], &err_pipe.fd[1]})
    if (pidfd < 0 && *fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
  int out_fd = out_pipe.fd[0];
  int err_fd = err_pipe.fd[0];
  bool marker_seen = false;
  if (plain_wait)
    wait_for_exit(pid);
  while (!plain_wait) {
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
  if (to_files) {
    out.take_file(out_file);
    err.take_file(err_file);
  }
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
