#pragma once

// Private to `sqlite_store`: one owner per store file. The owner holds an
// exclusive `flock` on a sidecar file `<store>-owner` for as long as the
// store is open. The kernel drops the lock when the owner's process ends in
// any way (SIGKILL included), so a lock never outlives its owner and a
// stale owner needs no clean-up: the next open simply gets the lock. A lock
// is per open file description, so a second open in the same process is
// refused as well.

#include <string>

#include <caf/error.hpp>

namespace pool::detail {

class store_owner {
public:
  store_owner() = default;

  ~store_owner();

  store_owner(const store_owner&) = delete;

  store_owner& operator=(const store_owner&) = delete;

  /// Takes ownership of the store at `store_path`, creating the sidecar
  /// file if needed, and writes this process's pid, host name and the time
  /// into it. Fails with `store_in_use` naming the current owner (as the
  /// sidecar says) when another store holds it, or `store_failed` when the
  /// sidecar cannot be created or locked. Never blocks.
  caf::error acquire(const std::string& store_path);

  /// What the sidecar said before `acquire` took it over: the previous
  /// owner, gone now; empty when there was none.
  const std::string& previous() const noexcept {
    return previous_;
  }

  /// The sidecar file of the store at `store_path`.
  static std::string file_of(const std::string& store_path);

private:
  int fd_ = -1;
  std::string previous_;
};

} // namespace pool::detail
