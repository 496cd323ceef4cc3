#pragma once

// Test helpers for child processes: start a program, wait for it with a
// bound, wait for a condition with a bound.

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pool::test {

/// Starts `program` with `args`; its standard error goes to `stderr_file`
/// when not empty.
inline pid_t start_process(const std::string& program,
                           const std::vector<std::string>& args,
                           const std::string& stderr_file = {}) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (auto& x : args)
    argv.push_back(const_cast<char*>(x.c_str()));
  argv.push_back(nullptr);
  auto pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!stderr_file.empty()) {
      auto fd = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || dup2(fd, 2) < 0)
        _exit(126);
    }
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

/// Waits for `pid` at most `timeout`; kills it and fails if it is still
/// running then. Returns its wait status.
inline int wait_for(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL("child did not finish in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{10}); // a child
  }
  return status;
}

/// Polls `condition` every 10 ms until it holds; false after `timeout`.
template <class F>
bool eventually(F condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{10}); // polling
  }
  return true;
}

} // namespace pool::test
