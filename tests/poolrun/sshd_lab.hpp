// Test helper: real OpenSSH servers on 127.0.0.1, with keys made for the
// test and an ssh config naming hosts: `good`, `dying` (a second server),
// `refuser` (a key the servers do not accept) and `impostor` (a
// known_hosts entry with another host key). Nothing of the system's ssh
// configuration is read or touched.
#pragma once

#include "child_process.hpp"

#include <dirent.h>
#include <map>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>

namespace poolrun::test {

/// A port nothing listens on now.
inline int free_port() {
  auto fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline bool port_open(int port) {
  auto fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  auto ok =
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

/// The processes descended from `root`, from /proc.
inline std::vector<pid_t> descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> parent_of;
  auto dir = ::opendir("/proc");
  REQUIRE(dir != nullptr);
  while (auto entry = ::readdir(dir)) {
    auto pid = static_cast<pid_t>(std::atol(entry->d_name));
    if (pid <= 0)
      continue;
    auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 4 > stat.size())
      continue;
    parent_of.emplace_back(pid, static_cast<pid_t>(
                                    std::atol(stat.c_str() + paren + 4)));
  }
  ::closedir(dir);
  std::vector<pid_t> result{root};
  for (size_t i = 0; i < result.size(); ++i)
    for (auto& [pid, ppid] : parent_of)
      if (ppid == result[i])
        result.push_back(pid);
  return result;
}

/// The servers and the client side of a test.
class sshd_lab {
public:
  sshd_lab() {
    for (auto key : {"host_key", "client_key", "other_key"}) {
      child_process gen{{"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                         dir_ / key}};
      REQUIRE(gen.exit_code(20s) == 0);
    }
    write_file(dir_ / "authorized_keys", read_file(dir_ / "client_key.pub"));
    auto pw = ::getpwuid(::geteuid());
    REQUIRE(pw != nullptr);
    user_ = pw->pw_name;
    home_ = pw->pw_dir;
    good_port_ = start_server("good");
    dying_port_ = start_server("dying");
    auto host_key = first_words(read_file(dir_ / "host_key.pub"));
    auto other_key = first_words(read_file(dir_ / "other_key.pub"));
    std::string known;
    for (auto port : {good_port_, dying_port_})
      known += "[127.0.0.1]:" + std::to_string(port) + " " + host_key + "\n";
    write_file(dir_ / "known_hosts", known);
    write_file(dir_ / "wrong_known_hosts", "[127.0.0.1]:" +
                                               std::to_string(good_port_) +
                                               " " + other_key + "\n");
    // First match wins in ssh_config: the special hosts come first.
    write_file(dir_ / "ssh_config",
               "Host refuser\n  IdentityFile " + dir_ / "other_key" +
                   "\nHost impostor\n  UserKnownHostsFile " +
                   dir_ / "wrong_known_hosts" +
                   "\nHost dying\n  Port " + std::to_string(dying_port_) +
                   "\nHost * !refuser\n  IdentityFile " + dir_ / "client_key" +
                   "\nHost *\n  HostName 127.0.0.1\n  Port " +
                   std::to_string(good_port_) + "\n  User " + user_ +
                   "\n  IdentitiesOnly yes\n  BatchMode yes\n"
                   "  StrictHostKeyChecking yes\n"
                   "  GlobalKnownHostsFile /dev/null\n  UserKnownHostsFile " +
                   dir_ / "known_hosts" + "\n  LogLevel ERROR\n");
  }

  ~sshd_lab() {
    for (auto& s : servers_)
      kill_server(s.second);
  }

  sshd_lab(const sshd_lab&) = delete;
  sshd_lab& operator=(const sshd_lab&) = delete;

  /// `--ssh` for poolrun: ssh with this lab's config.
  std::string ssh() const {
    return "ssh -F " + dir_ / "ssh_config";
  }

  int port(const std::string& name) const {
    return name == "dying" ? dying_port_ : good_port_;
  }

  /// Kills server `name` and every process it started, as a host that
  /// dies takes its processes with it.
  void kill_host(const std::string& name) {
    for (auto& s : servers_)
      if (s.first == name)
        kill_server(s.second);
  }

  const temp_dir& dir() const {
    return dir_;
  }

private:
  static std::string first_words(const std::string& pub) {
    auto second_space = pub.find(' ', pub.find(' ') + 1);
    return pub.substr(0, second_space);
  }

  static void kill_server(pid_t& pid) {
    if (pid <= 0)
      return;
    for (auto p : descendants(pid))
      ::kill(p, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }

  int start_server(const std::string& name) {
    auto port = free_port();
    auto config = dir_ / ("sshd_" + name);
    write_file(config, "Port " + std::to_string(port) +
                           "\nListenAddress 127.0.0.1\nHostKey " +
                           dir_ / "host_key" + "\nAuthorizedKeysFile " +
                           dir_ / "authorized_keys" + "\nPidFile " +
                           dir_ / ("pid_" + name) +
                           "\nStrictModes no\nUsePAM no\n"
                           "PasswordAuthentication no\n"
                           "KbdInteractiveAuthentication no\n"
                           "PermitRootLogin prohibit-password\n"
                           "MaxSessions 100\nMaxStartups 100\n"
                           "LogLevel ERROR\n");
    std::vector<std::string> argv;
    if (::geteuid() == 0) {
      // sshd as root needs its privilege separation directory, /run/sshd:
      // made in a mount namespace of its own, not on the system. The home
      // directory gets an empty tmpfs there too, so that no .bashrc slows
      // every command down.
      argv = {"unshare", "-m", "sh", "-c",
              "mount -t tmpfs poolrun-test /run && mkdir -m 755 /run/sshd && "
              "mount -t tmpfs poolrun-test \"$1\" && exec /usr/sbin/sshd -D "
              "-e -f \"$2\"",
              "sh", home_, config};
    } else {
      argv = {"/usr/sbin/sshd", "-D", "-e", "-f", config};
    }
    auto pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      auto log = ::open((dir_ / ("log_" + name)).c_str(),
                        O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
      std::vector<char*> args;
      for (auto& a : argv)
        args.push_back(a.data());
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    servers_.emplace_back(name, pid);
    for (int i = 0; i < 500 && !port_open(port); ++i) {
      if (::waitpid(pid, nullptr, WNOHANG) == pid)
        FAIL("sshd did not start: " << read_file(dir_ / ("log_" + name)));
      std::this_thread::sleep_for(10ms); // polling a server we started
    }
    REQUIRE_MESSAGE(port_open(port),
                    "sshd is not listening: " << read_file(dir_ /
                                                           ("log_" + name)));
    return port;
  }

  temp_dir dir_;
  std::string user_;
  std::string home_;
  int good_port_ = 0;
  int dying_port_ = 0;
  std::vector<std::pair<std::string, pid_t>> servers_;
};

} // namespace poolrun::test
