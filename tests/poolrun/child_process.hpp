// Test helpers: poolrun as a child process, temporary dirs and files.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace poolrun::test {

using namespace std::chrono_literals;

/// A fresh directory, removed with its content at the end of the scope.
struct temp_dir {
  std::string path;

  temp_dir() {
    char tmpl[] = "/tmp/poolrun-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }

  ~temp_dir() {
    auto cmd = "rm -rf '" + path + "'";
    [[maybe_unused]] auto rc = std::system(cmd.c_str());
  }

  std::string operator/(const std::string& name) const {
    return path + "/" + name;
  }
};

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out << text;
  REQUIRE(out.good());
}

inline std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line))
    result.push_back(line);
  return result;
}

/// Whether process `pid` is gone: no such process, or a zombie (this
/// container's init may never reap orphans).
inline bool process_gone(pid_t pid) {
  std::ifstream stat{"/proc/" + std::to_string(pid) + "/stat"};
  if (!stat)
    return true;
  std::string content;
  std::getline(stat, content);
  auto paren = content.rfind(')');
  return paren == std::string::npos || paren + 2 >= content.size() ||
         content[paren + 2] == 'Z' || content[paren + 2] == 'X';
}

/// A running child process: its standard input is `input` (then closed,
/// unless `keep_input_open`), its standard output and error are captured;
/// `env` entries ("NAME=value") are added to its environment.
class child_process {
public:
  child_process(std::vector<std::string> argv, const std::string& input = "",
                const std::string& cwd = "",
                std::vector<std::string> env = {},
                bool keep_input_open = false) {
    int in_pipe[2];
    int out_pipe[2];
    int err_pipe[2];
    REQUIRE(::pipe2(in_pipe, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(out_pipe, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(err_pipe, O_CLOEXEC) == 0);
    std::vector<char*> args;
    for (auto& arg : argv)
      args.push_back(arg.data());
    args.push_back(nullptr);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(in_pipe[0], STDIN_FILENO);
      ::dup2(out_pipe[1], STDOUT_FILENO);
      ::dup2(err_pipe[1], STDERR_FILENO);
      if (!cwd.empty() && ::chdir(cwd.c_str()) != 0)
        ::_exit(126);
      for (auto& entry : env)
        ::putenv(entry.data());
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    in_fd_ = in_pipe[1];
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    // Input is written while output is read: neither pipe fills up.
    write_input(input);
    if (!keep_input_open)
      close_input();
  }

  /// Writes `text` to its standard input, reading its output meanwhile.
  void write_input(const std::string& text) {
    size_t done = 0;
    ::fcntl(in_fd_, F_SETFL, O_NONBLOCK);
    while (done < text.size()) {
      auto n = ::write(in_fd_, text.data() + done, text.size() - done);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR)
        break;
      pump(10);
    }
  }

  void close_input() {
    if (in_fd_ >= 0)
      ::close(in_fd_);
    in_fd_ = -1;
  }


  ~child_process() {
    close_input();
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0)
      ::close(out_fd_);
    if (err_fd_ >= 0)
      ::close(err_fd_);
  }

  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  pid_t pid() const {
    return pid_;
  }

  /// What it wrote to standard output so far.
  const std::string& out() const {
    return out_;
  }

  /// What it wrote to standard error so far.
  const std::string& err() const {
    return err_;
  }

  /// Reads output until `enough(out())` holds or `timeout` passed; returns
  /// whether it held.
  bool read_until(const std::function<bool(const std::string&)>& enough,
                  std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!enough(out_)) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0 || (out_fd_ < 0 && err_fd_ < 0))
        return enough(out_);
      pump(static_cast<int>(left));
    }
    return true;
  }

  void signal(int sig) {
    ::kill(pid_, sig);
  }

  /// Reads all output and waits for the exit; kills the child and fails
  /// the test when it takes longer than `timeout`. Returns the wait status.
  int wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out_fd_ >= 0 || err_fd_ >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) {
        ::kill(pid_, SIGKILL);
        FAIL("child did not finish in time; output so far:\n"
             << out_ << "\nstderr:\n"
             << err_);
      }
      pump(static_cast<int>(left));
    }
    close_input();
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      // retry
    }
    reaped_ = true;
    return status;
  }

  /// `wait`, expecting a normal exit; returns the exit status.
  int exit_code(std::chrono::milliseconds timeout) {
    auto status = wait(timeout);
    REQUIRE_MESSAGE(WIFEXITED(status), "terminated by signal "
                                           << WTERMSIG(status) << "; stderr:\n"
                                           << err_);
    return WEXITSTATUS(status);
  }

  /// Reads what output comes within `timeout_ms`.
  void pump(int timeout_ms) {
    pollfd fds[2];
    nfds_t count = 0;
    if (out_fd_ >= 0)
      fds[count++] = pollfd{out_fd_, POLLIN, 0};
    if (err_fd_ >= 0)
      fds[count++] = pollfd{err_fd_, POLLIN, 0};
    if (::poll(fds, count, timeout_ms) <= 0)
      return;
    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents == 0)
        continue;
      auto& fd = fds[i].fd == out_fd_ ? out_fd_ : err_fd_;
      auto& dst = fds[i].fd == out_fd_ ? out_ : err_;
      char buf[4096];
      auto n = ::read(fd, buf, sizeof(buf));
      if (n > 0) {
        dst.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fd);
        fd = -1;
      }
    }
  }

private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int in_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
};

/// The command line running the poolrun under test with `args`.
inline std::vector<std::string> poolrun_argv(std::vector<std::string> args) {
  args.insert(args.begin(), POOLRUN_BINARY);
  return args;
}

/// The command line running GNU parallel with `args`.
inline std::vector<std::string> parallel_argv(std::vector<std::string> args) {
  REQUIRE_MESSAGE(::access("/usr/bin/parallel", X_OK) == 0,
                  "GNU parallel is missing: run scripts/install-deps");
  args.insert(args.begin(), {"/usr/bin/parallel", "--will-cite"});
  return args;
}

/// Waits until `path` has at least `n` lines.
inline bool wait_for_lines(const std::string& path, size_t n,
                           std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (lines_of(read_file(path)).size() < n) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(10ms); // polling a file another process writes
  }
  return true;
}

/// The numbers in lines "<word> n" of `text`, from line `first` on.
inline std::multiset<int> numbers_in(const std::string& text,
                                     size_t first = 0) {
  std::multiset<int> result;
  auto lines = lines_of(text);
  for (size_t i = first; i < lines.size(); ++i)
    result.insert(std::stoi(lines[i].substr(lines[i].find(' ') + 1)));
  return result;
}

inline std::vector<std::string> sorted_lines(const std::string& text) {
  auto lines = lines_of(text);
  std::sort(lines.begin(), lines.end());
  return lines;
}

/// The lines of `text`, sorted, as one text (readable in a failed check).
inline std::string sorted_text(const std::string& text) {
  std::string out;
  for (auto& line : sorted_lines(text))
    out += line + "\n";
  return out;
}

} // namespace poolrun::test
