// OpenSSH for remote slots: ControlMaster processes and remote wrappers.
#include "ssh.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process.hpp"
#include "shell.hpp"
#include "specs.hpp"

namespace poolrun {

namespace {

using steady = std::chrono::steady_clock;

/// Splits at commas; `\,` and `,,` stand for a comma (GNU parallel).
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> result(1);
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == ',') {
      result.back() += ',';
      ++i;
    } else if (c == ',' && i + 1 < text.size() && text[i + 1] == ',') {
      result.back() += ',';
      ++i;
    } else if (c == ',' || c == '\n') {
      result.emplace_back();
    } else {
      result.back() += c;
    }
  }
  return result;
}

std::string trim(const std::string& text) {
  auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos)
    return {};
  auto end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

/// What ssh's standard error says went wrong: its last line, and whether
/// the host key changed (ssh's warning box says it at length).
std::string last_words(const std::string& text) {
  std::string last;
  size_t begin = 0;
  while (begin < text.size()) {
    auto end = text.find('\n', begin);
    if (end == std::string::npos)
      end = text.size();
    auto line = trim(text.substr(begin, end - begin));
    if (!line.empty())
      last = line;
    begin = end + 1;
  }
  if (text.find("REMOTE HOST IDENTIFICATION HAS CHANGED") != std::string::npos)
    last += " (the host key differs from the one in known_hosts)";
  return last;
}

} // namespace

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    auto begin = text.find_first_not_of(" \t", i);
    if (begin == std::string::npos)
      break;
    auto end = text.find_first_of(" \t", begin);
    if (end == std::string::npos)
      end = text.size();
    words.push_back(text.substr(begin, end - begin));
    i = end;
  }
  return words;
}

std::vector<sshlogin> parse_sshlogins(const std::vector<std::string>& entries,
                                      const std::vector<std::string>& ssh,
                                      std::string& error) {
  std::vector<sshlogin> result;
  for (auto& entry : entries) {
    for (auto& raw : split_commas(entry)) {
      auto text = trim(raw);
      if (text.empty())
        continue;
      if (text[0] == '@') {
        error = "sshlogin '" + text + "': host groups (@group) are not "
                "supported by poolrun";
        return {};
      }
      sshlogin login;
      // "N/" in front: the host's cores.
      auto slash = text.find('/');
      if (slash != std::string::npos && slash > 0) {
        if (auto n = parse_count(text.substr(0, slash), 1, 100000)) {
          login.cpus = static_cast<size_t>(*n);
          text = text.substr(slash + 1);
        }
      }
      auto words = split_words(text);
      if (words.empty()) {
        error = "sshlogin '" + raw + "' names no host";
        return {};
      }
      login.login = words.back();
      if (words.size() > 1) // its own ssh command
        login.ssh_command.assign(words.begin(), words.end() - 1);
      else
        login.ssh_command = ssh;
      if (login.login.find(':') != std::string::npos && !login.local() &&
          login.login.find('@') != std::string::npos &&
          login.login.find(':') < login.login.find('@')) {
        error = "sshlogin '" + text + "': passwords (user:password@host) are "
                "not supported; use keys (ssh-agent, ssh-copy-id)";
        return {};
      }
      login.display = text;
      if (login.local())
        login.ssh_command.clear();
      result.push_back(std::move(login));
    }
  }
  return result;
}

std::vector<std::string>
read_sshlogin_files(const std::vector<std::string>& paths,
                    std::string& error) {
  std::vector<std::string> result;
  for (auto& path : paths) {
    std::ifstream in{path};
    if (!in) {
      error = "cannot read sshlogin file '" + path + "': " +
              std::strerror(errno);
      return {};
    }
    std::string line;
    while (std::getline(in, line)) {
      auto text = trim(line);
      if (!text.empty() && text[0] != '#')
        result.push_back(text);
    }
  }
  return result;
}

// -- ssh_master ----------------------------------------------------------------

ssh_master::ssh_master(const sshlogin& login, std::string control_path)
    : login_(login), control_path_(std::move(control_path)) {
  // Nothing else.
}

ssh_master::~ssh_master() {
  stop();
}

std::string ssh_master::connect(std::chrono::milliseconds timeout) {
  stop();
  ::unlink(control_path_.c_str());
  auto argv = login_.ssh_command;
  for (const char* arg :
       {"-M", "-N", "-S", control_path_.c_str(), "-o", "ControlPersist=no",
        "-o", "BatchMode=yes", "-o", "ServerAliveInterval=5", "-o",
        "ServerAliveCountMax=3"})
    argv.emplace_back(arg);
  argv.push_back(login_.login);
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0)
    return std::string{"cannot create a pipe: "} + std::strerror(errno);
  auto pid = spawn_process(argv, {}, -1, -1, err_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    ::close(err_pipe[0]);
    return "cannot start '" + argv[0] + "': " + std::strerror(-pid);
  }
  pid_ = pid;
  ::fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  std::string messages;
  auto deadline = steady::now() + timeout;
  std::string why;
  for (;;) {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(err_pipe[0], buf, sizeof(buf))) > 0)
      messages.append(buf, static_cast<size_t>(n));
    struct stat st;
    if (::stat(control_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
      break; // authenticated: the master listens
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      while ((n = ::read(err_pipe[0], buf, sizeof(buf))) > 0)
        messages.append(buf, static_cast<size_t>(n));
      why = last_words(messages);
      if (why.empty())
        why = "ssh exited with status " +
              std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 255);
      break;
    }
    if (steady::now() >= deadline) {
      why = "no connection within " +
            std::to_string(timeout.count() / 1000) + " s";
      stop();
      break;
    }
    pollfd fd{err_pipe[0], POLLIN, 0};
    ::poll(&fd, 1, 5);
  }
  ::close(err_pipe[0]);
  return why;
}

bool ssh_master::alive() {
  if (pid_ < 0)
    return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void ssh_master::stop() {
  if (pid_ < 0)
    return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 200; ++i) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (pid_ >= 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  ::unlink(control_path_.c_str());
}

std::vector<std::string> ssh_master::session(const std::string& remote) const {
  auto argv = login_.ssh_command;
  for (const char* arg : {"-S", control_path_.c_str(), "-o",
                          "ControlMaster=no", "-o", "BatchMode=yes", "-T"})
    argv.emplace_back(arg);
  argv.push_back(login_.login);
  argv.emplace_back("--");
  argv.push_back(remote);
  return argv;
}

bool ssh_master::run(const std::string& remote, std::string& out,
                     std::chrono::milliseconds timeout,
                     const std::string* input) const {
  launch_spec spec;
  spec.argv = session(remote);
  spec.timeout = caf::timespan{timeout};
  spec.input = input;
  auto outcome = run_process(spec);
  out = outcome.result.out;
  return outcome.spawn_error == 0 && !outcome.result.failed();
}

// -- the remote side -----------------------------------------------------------

std::string remote_wrapper(const std::string& command, uint64_t seq,
                           size_t slot) {
  // sshd runs this with the login shell, which it made a session (and
  // process group) leader. A watchdog kills the group when sshd's session
  // process is gone (connection lost, poolrun killed).
  std::string w;
  w += "printf 'poolrun-pgid %s\\n' $$ >&2;";
  w += "PARALLEL_SEQ=" + std::to_string(seq) +
       ";PARALLEL_JOBSLOT=" + std::to_string(slot) +
       ";export PARALLEL_SEQ PARALLEL_JOBSLOT;";
  w += "poolrun_sshd=$PPID;";
  w += "(while [ -d /proc/$poolrun_sshd ] || kill -0 $poolrun_sshd 2>/dev/null;"
       "do sleep 1;done;kill -KILL -- -$$) </dev/null >/dev/null 2>&1 &";
  w += "poolrun_watch=$!;";
  // A subshell of the login shell: no second shell start (and no second
  // read of a .bashrc that sshd's bash reads).
  w += "(eval " + shell_quote(command) + ");";
  w += "poolrun_status=$?;kill $poolrun_watch 2>/dev/null;"
       "exit $poolrun_status";
  return w;
}

std::string remote_path(const std::string& local) {
  auto dot = local.find("/./");
  if (dot != std::string::npos)
    return local.substr(dot + 3);
  if (local.rfind("./", 0) == 0)
    return local.substr(2);
  return local;
}

} // namespace poolrun
