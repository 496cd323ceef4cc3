#pragma once

// Private to the durable stores: group commit over one database
// connection. Changes go into one open transaction that `commit()` ends.
// A rolled-back group keeps its changes other than pushes and writes them
// again in the next group, and reports its pushes as lost (see
// `work_store::commit`).
//
// `Backend` is a handle to the store's connection (held by value), with:
// - `using change = ...;` one write, kept for a replay;
// - `caf::error begin()`, `caf::error end()` (commit), `caf::error
//   rollback()` (an error leaves the connection unusable), `bool
//   in_transaction() const`;
// - `caf::error apply(const change&, const std::string& what)`: may only
//   queue the change until `flush()` (or `end()`) sends it;
// - `caf::error flush()`: sends queued changes (an error aborts);
// - `bool aborts(const caf::error&) const`: whether a failed `apply`
//   rolled the transaction back (a refused write, such as a fenced one,
//   did not: it is neither kept nor replayed);
// - `const std::string& location() const`: the file or server, for errors.

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <fmt/format.h>

#include "pool/errors.hpp"
#include "pool/work_record.hpp"
#include "store_codec.hpp"

namespace pool::detail {

/// What `durable_store` (pool/detail/durable_store.hpp) does with its
/// group, whatever the backend: see `group_commit` for each member.
class group_commit_base {
public:
  virtual ~group_commit_base() = default;

  virtual caf::error commit() = 0;

  virtual void discard() = 0;

  virtual void abort(const caf::error& cause) = 0;

  virtual const std::vector<attempt_id>& lost() const noexcept = 0;

  virtual const caf::error& broken() const noexcept = 0;

  virtual void set_broken(caf::error err) = 0;

  virtual const std::string& location() const noexcept = 0;
};

template <class Backend>
class group_commit : public group_commit_base {
public:
  using change = typename Backend::change;

  /// After a rollback, `reload` makes the store's in-memory state match
  /// the database again (minus what the kept changes take back: `kept()`).
  group_commit(Backend db, std::function<caf::error()> reload)
      : db_(db), reload_(std::move(reload)) {
    // nop
  }

  /// Writes `x` into the open group, opening one (and writing the kept
  /// changes again) if needed. `push` names the attempt when `x` stores a
  /// queue entry: such a change is not kept; a rollback reports it lost.
  /// Every other change is kept until a commit succeeds. On error the
  /// group was rolled back (`commit()` reports it too), unless the backend
  /// says the write was only refused.
  caf::error write(change x, const std::string& what,
                   std::optional<attempt_id> push = std::nullopt) {
    if (broken_)
      return broken_;
    auto keep = !push;
    if (auto err = begin()) {
      if (keep) {
        changes_.push_back(std::move(x));
        replay_needed_ = true;
      }
      return err;
    }
    if (auto err = db_.apply(x, what)) {
      if (!db_.aborts(err))
        return err;
      if (keep)
        changes_.push_back(std::move(x));
      abort(err);
      return err;
    }
    if (keep)
      changes_.push_back(std::move(x));
    else
      group_pushes_.push_back(*push);
    return caf::none;
  }

  /// Runs `f()` in the open group, opening one if needed, without keeping
  /// anything for a replay: if the group rolls back, the write is simply
  /// gone (for writes that the next call makes again: claims, renewals,
  /// pruning). `f` returns a `caf::expected`; on an error that aborts, the
  /// group is rolled back. Changes the backend queued may still wait: `f`
  /// must not depend on them (else `flush()` first).
  template <class F>
  auto write_once(F f) -> decltype(f()) {
    if (broken_)
      return broken_;
    if (auto err = begin())
      return err;
    auto result = f();
    if (!result && db_.aborts(result.error()))
      abort(result.error());
    return result;
  }

  /// Runs the read `f()`, in the open group if there is one. A failure
  /// that aborted the group's transaction rolls the group back.
  template <class F>
  auto read(F f) -> decltype(f()) {
    if (broken_)
      return broken_;
    if (auto err = flush())
      return err;
    auto result = f();
    if (!result && in_group_ && db_.aborts(result.error()))
      abort(result.error());
    return result;
  }

  /// Sends the changes the backend queued; an error rolls the group back.
  caf::error flush() {
    if (!in_group_)
      return caf::none;
    auto err = db_.flush();
    if (err)
      abort(err);
    return err;
  }

  /// Ends the open group (see `work_store::commit`).
  caf::error commit() final {
    if (broken_) {
      // Nothing since the last commit can be stored any more.
      lost_ = std::move(dropped_);
      dropped_.clear();
      lost_.insert(lost_.end(), group_pushes_.begin(), group_pushes_.end());
      group_pushes_.clear();
      return broken_;
    }
    caf::error err;
    if (replay_needed_ && !in_group_)
      err = begin();
    if (!err && in_group_) {
      err = db_.end();
      if (err) {
        abort(err);
      } else {
        in_group_ = false;
        changes_.clear();
        group_pushes_.clear();
      }
    }
    lost_ = std::move(dropped_);
    dropped_.clear();
    auto cause = std::move(rollback_cause_);
    rollback_cause_ = caf::none;
    if (err)
      return err;
    if (!lost_.empty())
      return caf::make_error(pool_errc::store_failed, db_.location(),
                             fmt::format("{} pushes since the last commit "
                                         "were rolled back after {}",
                                         lost_.size(), detail_of(cause)));
    return caf::none;
  }

  /// Drops every change since the last successful commit, then reloads.
  void discard() final {
    rollback();
    changes_.clear();
    group_pushes_.clear();
    dropped_.clear();
    lost_.clear();
    replay_needed_ = false;
    rollback_cause_ = caf::none;
    if (!broken_)
      if (auto err = reload_())
        broken_ = std::move(err);
  }

  /// Rolls the open group back after `cause` and reloads.
  void abort(const caf::error& cause) final {
    // The database may have rolled back already (disk full, lost
    // connection); either way, nothing of the group is stored now.
    rollback();
    dropped_.insert(dropped_.end(), group_pushes_.begin(), group_pushes_.end());
    group_pushes_.clear();
    if (!rollback_cause_)
      rollback_cause_ = cause;
    replay_needed_ = !changes_.empty();
    if (broken_)
      return;
    if (auto err = reload_())
      broken_ = std::move(err);
  }

  /// Whether a group is open.
  bool open() const noexcept {
    return in_group_;
  }

  /// The pushes the last `commit()` reported lost.
  const std::vector<attempt_id>& lost() const noexcept final {
    return lost_;
  }

  /// The changes written since the last successful commit, other than
  /// pushes.
  const std::vector<change>& kept() const noexcept {
    return changes_;
  }

  /// The error that stopped the store (its state could not be reloaded, a
  /// rollback failed); none while it can go on.
  const caf::error& broken() const noexcept final {
    return broken_;
  }

  void set_broken(caf::error err) final {
    broken_ = std::move(err);
  }

  /// The file or server, for errors.
  const std::string& location() const noexcept final {
    return db_.location();
  }

private:
  /// Opens a group and writes the kept changes into it, if needed. A kept
  /// change that the backend now refuses (fenced) is dropped.
  caf::error begin() {
    if (in_group_)
      return caf::none;
    if (auto err = db_.begin())
      return err;
    in_group_ = true;
    if (replay_needed_) {
      for (auto i = changes_.begin(); i != changes_.end();) {
        auto err = db_.apply(*i, "writing the changes of a rolled-back "
                                 "transaction again");
        if (!err) {
          ++i;
        } else if (!db_.aborts(err)) {
          i = changes_.erase(i);
        } else {
          rollback();
          return err;
        }
      }
      replay_needed_ = false;
    }
    return caf::none;
  }

  /// Rolls back the open transaction, if any.
  void rollback() {
    if (db_.in_transaction()) {
      if (auto err = db_.rollback()) {
        // The connection may still hold a transaction: writing on would
        // mix rolled-back and new changes. Only reopening helps.
        broken_ = std::move(err);
      }
    }
    in_group_ = false;
  }

  Backend db_;
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
