// --semaphore: lock files as the slots, a marker file per waiting or
// running command (so --wait knows what is still to come).
#include "semaphore.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "shell.hpp"

namespace poolrun {

namespace {

namespace fs = std::filesystem;

constexpr auto poll_interval = std::chrono::milliseconds(50);

/// Takes a free slot: the lock file's descriptor (the lock goes with it).
int take_slot(const fs::path& dir, size_t slots) {
  for (;;) {
    for (size_t i = 0; i < slots; ++i) {
      auto path = dir / ("slot-" + std::to_string(i));
      int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
      if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;
      if (fd >= 0)
        ::close(fd);
    }
    std::this_thread::sleep_for(poll_interval);
  }
}

/// Runs the command in a slot; its exit status (128 + signal).
int run_in_slot(const fs::path& dir, size_t slots, const std::string& shell,
                const std::string& command) {
  auto marker = dir / ("job-" + std::to_string(::getpid()));
  int slot_fd = take_slot(dir, slots);
  int status = 255;
  pid_t child = ::fork();
  if (child == 0) {
    ::execl(shell.c_str(), shell.c_str(), "-c", command.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int raw = 0;
  while (child > 0 && ::waitpid(child, &raw, 0) < 0 && errno == EINTR) {
  }
  if (child > 0)
    status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  ::close(slot_fd);
  std::error_code ignored;
  fs::remove(marker, ignored);
  return status;
}

/// Waits until no command that marked itself is alive.
int wait_for_all(const fs::path& dir) {
  for (;;) {
    bool any = false;
    std::error_code ec;
    for (auto& entry : fs::directory_iterator(dir, ec)) {
      auto name = entry.path().filename().string();
      if (name.rfind("job-", 0) != 0)
        continue;
      auto pid = static_cast<pid_t>(std::atol(name.c_str() + 4));
      if (pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM))
        any = true;
      else
        fs::remove(entry.path(), ec); // ended without cleaning up
    }
    if (!any)
      return 0;
    std::this_thread::sleep_for(poll_interval);
  }
}

} // namespace

int run_semaphore(const run_options& opts, size_t slots, std::string& error) {
  auto home = std::getenv("HOME");
  fs::path dir = std::string{home != nullptr ? home : "/tmp"} +
                 "/.parallel/semaphores/poolrun-" + opts.semaphore_id;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    error = "--semaphore: cannot make " + dir.string() + ": " + ec.message();
    return 255;
  }
  if (opts.semaphore_wait)
    return wait_for_all(dir);
  std::string command;
  for (auto& word : opts.command)
    command += (command.empty() ? "" : " ") + word;
  auto shell = choose_shell(opts.shell);
  if (opts.semaphore_fg) {
    auto marker = dir / ("job-" + std::to_string(::getpid()));
    { std::ofstream{marker}; }
    return run_in_slot(dir, slots, shell, command);
  }
  // In the background: the parent returns once the child's marker is
  // there, so a --wait after it waits for this command too.
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    error = "--semaphore: cannot make a pipe";
    return 255;
  }
  pid_t child = ::fork();
  if (child < 0) {
    error = "--semaphore: cannot fork";
    return 255;
  }
  if (child == 0) {
    ::close(ready[0]);
    ::setsid();
    { std::ofstream{dir / ("job-" + std::to_string(::getpid()))}; }
    char byte = 1;
    [[maybe_unused]] auto n = ::write(ready[1], &byte, 1);
    ::close(ready[1]);
    ::_exit(run_in_slot(dir, slots, shell, command));
  }
  ::close(ready[1]);
  char byte = 0;
  while (::read(ready[0], &byte, 1) < 0 && errno == EINTR) {
  }
  ::close(ready[0]);
  return 0;
}

} // namespace poolrun
