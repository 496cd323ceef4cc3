// Remote slots over OpenSSH: sshlogins, one ControlMaster connection per
// slot, and the wrapper a remote command runs in.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <sys/types.h>

#include "options.hpp"

namespace poolrun {

/// Parses sshlogins as GNU parallel writes them: comma-separated
/// `[ncpus/]sshlogin` where an sshlogin is `[user@]host`, `:` (local), or
/// an ssh command ending in the host (`ssh -p 2222 host`). `ssh` is the
/// default ssh command (words). Returns what is wrong in `error`.
std::vector<sshlogin> parse_sshlogins(const std::vector<std::string>& entries,
                                      const std::vector<std::string>& ssh,
                                      std::string& error);

/// Reads sshlogin files (one a line; empty lines and `#` comments skipped).
std::vector<std::string>
read_sshlogin_files(const std::vector<std::string>& paths, std::string& error);

/// Splits a command into words at blanks (no quoting: as GNU parallel
/// splits --ssh).
std::vector<std::string> split_words(const std::string& text);

/// One ControlMaster connection: an `ssh -M -N` process of poolrun's whose
/// control socket other ssh invocations share. Not thread-safe: one slot
/// (one worker at a time) uses it.
class ssh_master {
public:
  ssh_master(const sshlogin& login, std::string control_path);
  ~ssh_master();

  ssh_master(const ssh_master&) = delete;
  ssh_master& operator=(const ssh_master&) = delete;

  /// Starts the master and waits until its control socket is up, the
  /// process failed, or `timeout` passed. Returns "" or why not (ssh's own
  /// message: "Permission denied (publickey)", "Host key verification
  /// failed", ...). Blocks.
  std::string connect(std::chrono::milliseconds timeout);

  /// Whether the master process is still running.
  bool alive();

  /// Ends the master (and with it every session it carries).
  void stop();

  /// `ssh -S socket host -- remote` as argv: a session over this master.
  std::vector<std::string> session(const std::string& remote) const;

  /// Runs `remote` over this master and returns its standard output, or
  /// nothing when it failed. Blocks (at most `timeout`).
  bool run(const std::string& remote, std::string& out,
           std::chrono::milliseconds timeout,
           const std::string* input = nullptr) const;

private:
  sshlogin login_;
  std::string control_path_;
  pid_t pid_ = -1;
};

/// The remote side of one command: prints "poolrun-pgid $$" on standard
/// error (the login shell sshd started leads its own process group), sets
/// PARALLEL_SEQ, PARALLEL_JOBSLOT, runs `command` with the login shell, and
/// kills its own process group when the connection to poolrun is lost.
std::string remote_wrapper(const std::string& command, uint64_t seq,
                           size_t slot);

/// Where --transferfile / --return put a local path on the remote side
/// (GNU parallel's rules: relative to the login directory; a `/./` makes
/// the rest relative).
std::string remote_path(const std::string& local);

} // namespace poolrun
