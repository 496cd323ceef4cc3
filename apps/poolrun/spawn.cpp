// Starting one process into its own process group: a vfork-like clone on
// a stack the thread keeps, with the program's place on PATH looked up
// once per name (as a shell hashes it); posix_spawnp for what that cannot
// start (a name on a relative folder of PATH, a program gone since).
#include "process.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace poolrun {

namespace {

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

/// /dev/null for every command's standard input, opened once (a dup2 in
/// the child instead of an open).
int dev_null() {
  static const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return fd;
}

// -- the PATH lookup, once per program name -------------------------------------

std::mutex programs_mtx;
std::unordered_map<std::string, std::string> programs;

/// Where execvp would find `name` on PATH: the first regular file there
/// that poolrun may execute, as an absolute path; "" for none (or for one
/// in a relative folder of PATH, which is left to posix_spawnp).
std::string search_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/bin:/usr/bin";
  for (;;) {
    auto colon = dirs.find(':');
    auto dir = dirs.substr(0, colon);
    if (dir.empty() || dir.front() != '/')
      return {}; // the working folder: not worth remembering
    std::string candidate{dir};
    candidate += '/';
    candidate += name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::faccessat(AT_FDCWD, candidate.c_str(), X_OK, AT_EACCESS) == 0)
      return candidate;
    if (colon == std::string_view::npos)
      return {};
    dirs.remove_prefix(colon + 1);
  }
}

/// The program to execute for `name` (a name without '/'), "" if unknown.
std::string find_program(const std::string& name) {
  {
    std::lock_guard<std::mutex> guard{programs_mtx};
    if (auto i = programs.find(name); i != programs.end())
      return i->second;
  }
  auto found = search_path(name);
  if (!found.empty()) {
    std::lock_guard<std::mutex> guard{programs_mtx};
    programs.emplace(name, found);
  }
  return found;
}

void forget_program(const std::string& name) {
  std::lock_guard<std::mutex> guard{programs_mtx};
  programs.erase(name);
}

// -- the child's side of a start ----------------------------------------------

/// Signals whose disposition a child must set back to the default: those
/// poolrun ignores (an ignored signal stays ignored across execve: SIGPIPE,
/// and any poolrun's own parent left ignored) and those it handles (its
/// handler must not run in the child before the execve). Looked at once,
/// at the first start, after main set poolrun's own.
const sigset_t& signals_to_reset() {
  static const sigset_t result = [] {
    sigset_t set;
    sigemptyset(&set);
    for (int sig = 1; sig < NSIG; ++sig) {
      struct sigaction sa;
      if (sig == SIGKILL || sig == SIGSTOP ||
          ::sigaction(sig, nullptr, &sa) != 0)
        continue;
      if (sa.sa_handler != SIG_DFL)
        sigaddset(&set, sig);
    }
    sigaddset(&set, SIGPIPE);
    return set;
  }();
  return result;
}

struct child_args {
  const char* path;
  char* const* argv;
  char* const* envp;
  int fds[3]; // the child's 0, 1 and 2; -1: 0 from /dev/null, 1 and 2 kept
  int max_fd; // above every fd poolrun may hold (for a kernel before 5.9)
  int error;  // errno of what failed in the child, 0 if it reached execve
};

/// One past the highest fd this process may open (its RLIMIT_NOFILE).
int fd_limit() {
  static const int result = [] {
    struct rlimit rl;
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
      return 1 << 20;
    return static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 1 << 20));
  }();
  return result;
}

/// Runs in the child, on the parent's memory, until execve: only
/// async-signal-safe calls, and nothing that returns into the parent's
/// frames. Every signal is blocked on entry.
int child_main(void* raw) {
  auto& a = *static_cast<child_args*>(raw);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  auto& reset = signals_to_reset(); // (already made by the parent)
  for (int sig = 1; sig < NSIG; ++sig)
    if (sigismember(&reset, sig) == 1)
      ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  if (::setpgid(0, 0) != 0)
    goto failed;
  for (int target = 0; target < 3; ++target) {
    auto fd = a.fds[target];
    if (fd < 0 && target == 0)
      fd = ::open("/dev/null", O_RDONLY);
    if (fd < 0)
      continue;
    if (fd == target) {
      if (::fcntl(fd, F_SETFD, 0) != 0) // keep it open across execve
        goto failed;
    } else if (::dup2(fd, target) < 0) {
      goto failed;
    }
  }
  // Nothing else of poolrun's (journal, other commands' pipes) leaks in.
  if (::close_range(3, ~0U, 0) != 0)
    for (int fd = 3; fd < a.max_fd; ++fd) // (a kernel before 5.9)
      ::close(fd);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(a.path, a.argv, a.envp);
failed:
  a.error = errno;
  ::_exit(127);
}

/// Starts `path` as `clone(CLONE_VM | CLONE_VFORK)` does: the child runs
/// on this thread's spare stack until its execve, this thread waits that
/// long. What glibc's posix_spawn would also do, without its per-start
/// stack mapping (an mmap and munmap: a TLB shoot-down on every other
/// thread's core) and its 64 sigaction calls in the child (it resets every
/// signal; here only those in `signals_to_reset`). Returns the pid, or
/// -errno (the child's, when its execve failed).
pid_t clone_and_exec(const char* path, char* const* argv, char* const* envp,
                     int in_fd, int out_fd, int err_fd) {
  constexpr size_t stack_size = 64 * 1024;
  thread_local std::unique_ptr<char[]> stack;
  if (!stack)
    stack = std::make_unique<char[]>(stack_size);
  signals_to_reset();
  child_args args{path, argv, envp, {in_fd, out_fd, err_fd}, fd_limit(), 0};
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  auto top = stack.get() + stack_size; // the stack grows down
  auto pid = ::clone(child_main, top, CLONE_VM | CLONE_VFORK | SIGCHLD,
                     &args);
  auto clone_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0)
    return -clone_error;
  if (args.error != 0) { // it never ran the program: reap it here
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      // retry
    }
    return -args.error;
  }
  return pid;
}

} // namespace

pid_t spawn_process(const std::vector<std::string>& args,
                    const std::vector<std::string>& env, int in_fd,
                    int out_fd, int err_fd) {
  if (in_fd < 0)
    in_fd = dev_null();
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
  int rc = ENOENT;
  // A name without '/': looked up on PATH once, not in every child (each
  // folder before the program's costs the child a failed execve: 9 of
  // them for `true` on a PATH of 10 folders).
  auto has_slash = args[0].find('/') != std::string::npos;
  auto program = has_slash ? args[0] : find_program(args[0]);
  if (!program.empty()) {
    pid = clone_and_exec(program.c_str(), argv.data(), envp.data(), in_fd,
                         out_fd, err_fd);
    if (pid >= 0)
      return pid;
    rc = -pid;
    if (has_slash || !(rc == ENOENT || rc == EACCES || rc == ENOTDIR))
      return -rc;
    forget_program(args[0]); // gone or changed since: look again
  }
  // The rare rest (a relative folder on PATH, a program gone since):
  // posix_spawnp searches PATH itself.
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
  rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(),
                      envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -rc;
}

} // namespace poolrun
