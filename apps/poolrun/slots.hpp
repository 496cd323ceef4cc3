// Job slots: where commands run (the local machine, ssh hosts), one slot per
// command at once, each remote slot with its own ControlMaster connection.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "options.hpp"
#include "ssh.hpp"

namespace poolrun {

/// A place for one command at a time.
struct slot {
  /// Job slot number (`{%}`, PARALLEL_JOBSLOT), from 1.
  size_t number = 0;
  /// Index of its host in `slot_table::hosts()`.
  size_t host = 0;
  /// Remote slots: the connection this slot's commands run over.
  std::unique_ptr<ssh_master> master;
  bool busy = false;
  /// Remote slots: the process group of the command running now, or 0.
  long remote_pgid = 0;
};

/// A machine slots run on.
struct host_info {
  sshlogin login;
  size_t cores = 0;
  bool up = true;
};

/// The slots of a run. A worker takes a slot for each command (its own
/// one when free) and gives it back after; a lost host's slots are never
/// handed out again, so the workers that had them borrow free slots of
/// other hosts. Thread-safe.
class slot_table {
public:
  using warn_fn = std::function<void(const std::string&)>;

  /// Connects every slot of `logins` (none: the local machine), `jobs`
  /// slots per host, and reports hosts it cannot use through `warn`.
  /// Blocks while connecting. Sets `error` when no slot can be used.
  static std::shared_ptr<slot_table>
  open(const std::vector<sshlogin>& logins, const jobs_spec& jobs,
       warn_fn warn, std::string& error);

  ~slot_table();

  slot_table(const slot_table&) = delete;
  slot_table& operator=(const slot_table&) = delete;

  size_t size() const noexcept {
    return slots_.size();
  }

  const host_info& host(size_t index) const {
    return hosts_[index];
  }

  /// Whether any slot is remote.
  bool remote() const noexcept {
    return remote_;
  }

  /// Takes slot `preferred` (a number) if it is free and its host up, else
  /// another free slot on a host up; while some host up is not in `avoid`
  /// (those the job failed on), only such hosts' slots. Waits while none
  /// is free. Nullptr when no host is up any more.
  /// Local slots: the jobs `announce`d before job `seq` take theirs
  /// first (each waited for up to `turn_wait`), so `{%}` goes by start
  /// order, as in GNU parallel, when several commands start at once.
  slot* acquire(size_t preferred, const std::vector<size_t>& avoid,
                uint64_t seq = 0);

  /// --tee: every command runs at once, so job N takes slot N where it
  /// can (GNU parallel starts them all before any ends).
  void number_by_seq() {
    by_seq_ = true;
  }

  /// Job `seq` is on its way to a worker (the runner, in input order).
  void announce(uint64_t seq);

  /// Job `seq` ended, or will never take a slot.
  void forget(uint64_t seq);

  /// How long a job waits for an earlier announced one to take its slot.
  static constexpr std::chrono::milliseconds turn_wait{200};

  /// Gives a slot back.
  void release(slot* s);

  /// Host `index` is lost: its slots are not handed out again. Reports it
  /// once. Returns whether any host is still up.
  bool host_down(size_t index, const std::string& why);

  /// Notes the remote process group of the command running on `s`.
  void running_remotely(slot* s, long pgid);

  /// Sends `sig` to the process group of every command running on a
  /// remote slot (through its connection). Blocks until sent.
  void signal_remote(int sig);

  /// Stops every connection.
  void close();

private:
  slot_table() = default;

  std::vector<host_info> hosts_;
  std::vector<slot> slots_;
  /// Announced jobs that have not taken a slot yet (local tables).
  std::set<uint64_t> announced_;
  bool by_seq_ = false;
  std::string control_dir_;
  bool remote_ = false;
  warn_fn warn_;
  std::mutex mtx_;
  std::condition_variable cv_;
};

} // namespace poolrun
