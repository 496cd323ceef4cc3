#include "pool/sqlite_store.hpp"

// The records of operations in a `sqlite_store`: unique keys, attempt
// histories, outcomes and lookups. The queue itself is in sqlite_store.cpp.

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "pool/errors.hpp"
#include "sqlite_db.hpp"
#include "sqlite_group.hpp"
#include "store_codec.hpp"

namespace pool {

using detail::as_int64;
using detail::change;
using detail::sql;
using detail::sql_value;

caf::error sqlite_store::set_key(uint64_t operation, std::string key) {
  try {
    if (auto& broken = group_->broken())
      return broken;
    pending_keys_[operation] = key;
    auto err =
        group_->write(change{sql::set_key, {as_int64(operation), key}, 0},
                      fmt::format("setting the key of op#{}", operation));
    // The operation has a row already: no push needs to carry the key.
    if (!err && db_->changes() > 0)
      pending_keys_.erase(operation);
    return err;
  } catch (...) {
    return on_exception();
  }
}

std::optional<uint64_t> sqlite_store::find_key(const std::string& key,
                                               time_point now,
                                               caf::timespan window) {
  try {
    if (group_->broken())
      return std::nullopt;
    // Bound without copying: the values must outlive the step.
    std::vector<sql_value> args{key, detail::to_wall(now, wall_offset_) -
                                         window.count()};
    if (db_->bind(sql::find_key, args, "finding a key"))
      return std::nullopt;
    auto stmt = db_->statement(sql::find_key);
    std::optional<uint64_t> result;
    // An error reads as "not found": the caller then runs the operation,
    // which at-least-once delivery allows.
    if (sqlite3_step(stmt) == SQLITE_ROW)
      result = static_cast<uint64_t>(sqlite3_column_int64(stmt, 0));
    db_->reset(sql::find_key);
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

caf::error sqlite_store::note_failure(uint64_t operation,
                                      const attempt_failure& x) {
  try {
    if (auto& broken = group_->broken())
      return broken;
    auto what =
        fmt::format("recording the failure of op#{}/{}", operation, x.attempt);
    std::vector<char> reason;
    if (auto err = detail::save(sys_, x.reason, reason))
      return caf::make_error(
          pool_errc::store_failed, path_,
          what + ": cannot serialize the error: " + describe(err));
    return group_->write(
        change{sql::add_failure,
               {as_int64(operation), int64_t{x.attempt},
                int64_t{x.after_submit.count()}, std::move(reason)},
               0},
        what);
  } catch (...) {
    return on_exception();
  }
}

caf::error sqlite_store::finish(uint64_t operation, const caf::message& result,
                                time_point now) {
  try {
    std::vector<char> blob;
    if (auto err = detail::save(sys_, result, blob))
      return caf::make_error(pool_errc::store_failed, path_,
                             fmt::format("recording the result of op#{}: "
                                         "cannot serialize it: {}",
                                         operation, describe(err)));
    return finish_impl(operation, operation_state::done, std::move(blob), now);
  } catch (...) {
    return on_exception();
  }
}

caf::error sqlite_store::finish(uint64_t operation, const caf::error& failure,
                                time_point now) {
  try {
    std::vector<char> blob;
    if (auto err = detail::save(sys_, failure, blob))
      return caf::make_error(pool_errc::store_failed, path_,
                             fmt::format("recording the failure of op#{}: "
                                         "cannot serialize it: {}",
                                         operation, describe(err)));
    return finish_impl(operation, operation_state::failed, std::move(blob),
                       now);
  } catch (...) {
    return on_exception();
  }
}

caf::error sqlite_store::finish_impl(uint64_t operation, operation_state state,
                                     std::vector<char> blob, time_point now) {
  if (auto& broken = group_->broken())
    return broken;
  drop(operation);
  sql_value result = nullptr;
  sql_value error = nullptr;
  if (state == operation_state::done)
    result = std::move(blob);
  else
    error = std::move(blob);
  return group_->write(
      change{sql::finish,
             {as_int64(operation), int64_t{static_cast<int>(state)},
              std::move(result), std::move(error),
              detail::to_wall(now, wall_offset_)},
             operation},
      fmt::format("recording the outcome of op#{}", operation));
}

std::optional<operation_record> sqlite_store::lookup(uint64_t operation) {
  try {
    if (group_->broken())
      return std::nullopt;
    return lookup_impl(operation);
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

std::optional<operation_record> sqlite_store::lookup_impl(uint64_t operation) {
  auto& db = *db_;
  if (db.bind(sql::select_operation, {as_int64(operation)}, "looking up"))
    return std::nullopt;
  auto stmt = db.statement(sql::select_operation);
  std::optional<operation_record> result;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    operation_record x;
    x.id = operation;
    x.state = static_cast<operation_state>(sqlite3_column_int(stmt, 0));
    x.attempt = static_cast<uint32_t>(sqlite3_column_int64(stmt, 1));
    x.key = detail::column_text(stmt, 5);
    auto ok = !detail::load_column(sys_, stmt, 2, x.payload);
    if (ok && sqlite3_column_type(stmt, 3) != SQLITE_NULL)
      ok = !detail::load_column(sys_, stmt, 3, x.result);
    if (ok && sqlite3_column_type(stmt, 4) != SQLITE_NULL)
      ok = !detail::load_column(sys_, stmt, 4, x.error);
    if (ok && sqlite3_column_type(stmt, 6) != SQLITE_NULL)
      ok = !detail::load_column(sys_, stmt, 6, x.options);
    if (ok)
      result = std::move(x);
  }
  db.reset(sql::select_operation);
  if (result && load_history(operation, result->history))
    return std::nullopt;
  return result;
}

std::vector<failed_operation>
sqlite_store::failed_operations(size_t limit, caf::timespan max_age,
                                time_point now) {
  std::vector<failed_operation> result;
  try {
    if (group_->broken() || limit == 0)
      return result;
    auto wall_now = detail::to_wall(now, wall_offset_);
    auto& db = *db_;
    if (db.bind(sql::select_failed, {wall_now - max_age.count()},
                "listing failed operations"))
      return result;
    auto stmt = db.statement(sql::select_failed);
    while (result.size() < limit && sqlite3_step(stmt) == SQLITE_ROW) {
      failed_operation x;
      auto& rec = x.record;
      rec.id = static_cast<uint64_t>(sqlite3_column_int64(stmt, 0));
      rec.state = operation_state::failed;
      rec.key = detail::column_text(stmt, 2);
      // A row that does not load is left out (it stays for `lookup`).
      auto ok = !detail::load_column(sys_, stmt, 1, rec.payload);
      if (ok && sqlite3_column_type(stmt, 3) != SQLITE_NULL)
        ok = !detail::load_column(sys_, stmt, 3, rec.options);
      if (ok && sqlite3_column_type(stmt, 4) != SQLITE_NULL)
        ok = !detail::load_column(sys_, stmt, 4, rec.error);
      if (!ok || !is(rec.error, pool_errc::operation_failed))
        continue;
      x.ago = caf::timespan{wall_now - sqlite3_column_int64(stmt, 5)};
      result.push_back(std::move(x));
    }
    db.reset(sql::select_failed);
    for (auto& x : result)
      if (load_history(x.record.id, x.record.history))
        x.record.history.clear();
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return {};
  }
}

caf::error sqlite_store::forget_failed(uint64_t operation) {
  try {
    if (auto& broken = group_->broken())
      return broken;
    auto what = fmt::format("forgetting the failed op#{}", operation);
    if (auto err = group_->write(
            change{sql::forget_failures, {as_int64(operation)}, 0}, what))
      return err;
    return group_->write(
        change{sql::forget_operation, {as_int64(operation)}, 0}, what);
  } catch (...) {
    return on_exception();
  }
}

std::vector<operation_record> sqlite_store::unfinished() {
  try {
    return unfinished_;
  } catch (...) {
    static_cast<void>(on_exception());
    return {};
  }
}

uint64_t sqlite_store::last_operation_id() {
  return last_id_;
}

caf::error sqlite_store::load_history(uint64_t operation,
                                      std::vector<attempt_failure>& out) {
  auto what = fmt::format("reading the attempt history of op#{}", operation);
  auto& db = *db_;
  if (auto err = db.bind(sql::select_history, {as_int64(operation)}, what))
    return err;
  auto stmt = db.statement(sql::select_history);
  caf::error err;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    attempt_failure x;
    x.attempt = static_cast<uint32_t>(sqlite3_column_int64(stmt, 0));
    x.after_submit = caf::timespan{sqlite3_column_int64(stmt, 1)};
    if (auto load_err = detail::load_column(sys_, stmt, 2, x.reason)) {
      err = caf::make_error(pool_errc::store_failed, path_,
                            what + ": " + describe(load_err));
      break;
    }
    out.push_back(std::move(x));
  }
  if (!err && rc != SQLITE_DONE)
    err = db.fail(rc, what);
  db.reset(sql::select_history);
  return err;
}

std::optional<caf::timespan> sqlite_store::prune_interval() const {
  if (!retention_)
    return std::nullopt;
  caf::timespan lo = std::chrono::seconds(1);
  caf::timespan hi = std::chrono::minutes(10);
  return std::clamp(*retention_ / 10, lo, hi);
}

caf::expected<size_t> sqlite_store::prune(time_point now, size_t limit) {
  try {
    if (!retention_ || limit == 0)
      return size_t{0};
    std::vector<sql_value> args{
        detail::to_wall(now, wall_offset_) - retention_->count(),
        static_cast<int64_t>(std::min<size_t>(limit, INT64_MAX))};
    auto& db = *db_;
    auto rows = group_->write_once([&]() -> caf::expected<size_t> {
      if (auto err = db.run(sql::save_last_id, {std::to_string(last_id_)},
                            "recording the highest operation id"))
        return err;
      if (auto err =
              db.run(sql::prune_failures, args, "pruning attempt histories"))
        return err;
      if (auto err = db.run(sql::prune_operations, args,
                            "pruning finished operations"))
        return err;
      return static_cast<size_t>(db.changes());
    });
    if (!rows)
      return std::move(rows.error());
    return *rows;
  } catch (...) {
    return on_exception();
  }
}

} // namespace pool
