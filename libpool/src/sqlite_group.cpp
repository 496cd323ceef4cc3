#include "sqlite_group.hpp"

#include <fmt/format.h>

#include "pool/errors.hpp"

namespace pool::detail {

sqlite_group::sqlite_group(sqlite_db& db, std::function<caf::error()> reload)
    : db_(db), reload_(std::move(reload)) {
  // nop
}

caf::error sqlite_group::write(change x, const std::string& what,
                               std::optional<attempt_id> push) {
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
  auto err = db_.run(x.statement, x.args, what);
  if (keep)
    changes_.push_back(std::move(x));
  if (err)
    abort(err);
  else if (push)
    group_pushes_.push_back(*push);
  return err;
}

caf::expected<int> sqlite_group::write_once(sql s,
                                            const std::vector<sql_value>& args,
                                            const std::string& what) {
  if (broken_)
    return broken_;
  if (auto err = begin())
    return err;
  if (auto err = db_.run(s, args, what)) {
    abort(err);
    return err;
  }
  return db_.changes();
}

caf::error sqlite_group::begin() {
  if (in_group_)
    return caf::none;
  if (auto err = db_.run(sql::begin, {}, "starting a transaction"))
    return err;
  in_group_ = true;
  if (replay_needed_) {
    for (auto& x : changes_) {
      if (auto err = db_.run(x.statement, x.args,
                             "writing the changes of a rolled-back "
                             "transaction again")) {
        rollback();
        return err;
      }
    }
    replay_needed_ = false;
  }
  return caf::none;
}

void sqlite_group::rollback() {
  if (db_.in_transaction()) {
    if (auto err = db_.run(sql::rollback, {}, "rolling back")) {
      // The connection may still hold a transaction: writing on would mix
      // rolled-back and new changes. Only reopening helps.
      broken_ = std::move(err);
    }
  }
  in_group_ = false;
}

void sqlite_group::abort(const caf::error& cause) {
  // SQLite may have rolled back already (disk full, I/O error); either
  // way, nothing of the group is in the file now.
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

caf::error sqlite_group::commit() {
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
    err = db_.run(sql::commit, {}, "committing");
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
    return caf::make_error(pool_errc::store_failed, db_.path(),
                           fmt::format("{} pushes since the last commit "
                                       "were rolled back after {}",
                                       lost_.size(), detail_of(cause)));
  return caf::none;
}

void sqlite_group::discard() {
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

} // namespace pool::detail
