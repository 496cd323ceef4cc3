// Starting one process: posix_spawn into its own process group, with the
// program's place on PATH looked up once per name (as a shell hashes it).
#include "process.hpp"

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
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

} // namespace

pid_t spawn_process(const std::vector<std::string>& args,
                    const std::vector<std::string>& env, int in_fd,
                    int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  if (in_fd < 0)
    in_fd = dev_null();
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
  int rc = ENOENT;
  // A name without '/': looked up on PATH once, not in every child (each
  // folder before the program's costs the child a failed execve: 9 of
  // them for `true` on a PATH of 10 folders).
  auto program = args[0].find('/') == std::string::npos
                     ? find_program(args[0])
                     : std::string{};
  if (!program.empty()) {
    rc = ::posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(),
                       envp.data());
    if (rc == ENOENT || rc == EACCES || rc == ENOTDIR)
      forget_program(args[0]); // gone or changed since: look again
  }
  if (program.empty() || rc == ENOENT || rc == EACCES || rc == ENOTDIR)
    rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(),
                        envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -rc;
}

} // namespace poolrun
