#pragma once

// Private to `sqlite_store`: group commit. Changes go into one open
// transaction that `commit()` ends; a rolled-back group keeps its changes
// other than pushes and writes them again in the next group, and reports
// its pushes as lost.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "pool/work_record.hpp"
#include "sqlite_db.hpp"

namespace pool::detail {

/// One write of a group.
struct change {
  sql statement;
  std::vector<sql_value> args;
  /// The operation whose queue entry this change takes out of the queue
  /// (pop, remove, finish); 0 for none.
  uint64_t leaves_queue = 0;
};

/// The open group of a store's connection. After a rollback it calls
/// `reload` so that the store's in-memory queue matches the file again
/// (minus what the kept changes take out: see `kept()`).
class sqlite_group {
public:
  sqlite_group(sqlite_db& db, std::function<caf::error()> reload);

  /// Writes `x` into the open group, opening one (and writing the kept
  /// changes again) if needed. `push` names the attempt when `x` stores a
  /// queue entry: such a change is not kept; a rollback reports it lost.
  /// Every other change is kept until a commit succeeds. On error the group
  /// was rolled back (`commit()` reports it too).
  caf::error write(change x, const std::string& what,
                   std::optional<attempt_id> push = std::nullopt);

  /// Runs `s` with `args` in the open group, opening one if needed, without
  /// keeping it: if the group rolls back, the write is simply gone (for
  /// writes that the next call makes again, such as pruning). Returns the
  /// number of rows changed. On error the group was rolled back.
  caf::expected<int> write_once(sql s, const std::vector<sql_value>& args,
                                const std::string& what);

  /// Ends the open group (see `work_store::commit`).
  caf::error commit();

  /// Drops every change since the last successful commit, then reloads.
  void discard();

  /// Rolls the open group back after `cause` and reloads.
  void abort(const caf::error& cause);

  /// The pushes the last `commit()` reported lost.
  const std::vector<attempt_id>& lost() const noexcept {
    return lost_;
  }

  /// The changes written since the last successful commit, other than
  /// pushes.
  const std::vector<change>& kept() const noexcept {
    return changes_;
  }

  /// The error that stopped the store (its queue could not be reloaded, a
  /// rollback failed); none while it can go on.
  const caf::error& broken() const noexcept {
    return broken_;
  }

  void set_broken(caf::error err) {
    broken_ = std::move(err);
  }

private:
  /// Opens a group and writes the kept changes into it, if needed.
  caf::error begin();

  /// Rolls back the open transaction, if any.
  void rollback();

  sqlite_db& db_;
  std::function<caf::error()> reload_;
  bool in_group_ = false;
  /// The kept changes must be written again before the next write.
  bool replay_needed_ = false;
  std::vector<change> changes_;
  /// Pushes of the open group.
  std::vector<attempt_id> group_pushes_;
  /// Pushes of rolled-back groups, not yet reported by `commit()`.
  std::vector<attempt_id> dropped_;
  /// What rolled the first of those groups back.
  caf::error rollback_cause_;
  /// Pushes reported lost by the last `commit()`.
  std::vector<attempt_id> lost_;
  caf::error broken_;
};

} // namespace pool::detail
