#include "pool/sqlite_store.hpp"

#include <algorithm>
#include <utility>

#include <caf/actor_system.hpp>
#include <fmt/format.h>

#include "pool/errors.hpp"
#include "sqlite_db.hpp"
#include "sqlite_group.hpp"
#include "sqlite_schema.hpp"
#include "store_codec.hpp"
#include "store_owner.hpp"

namespace pool {

using detail::as_int64;
using detail::change;
using detail::sql;
using detail::sql_value;

// -- construction -------------------------------------------------------------

sqlite_store::sqlite_store(caf::actor_system& sys, std::string path)
    : durable_store(sys), path_(std::move(path)) {
  owner_ = std::make_unique<detail::store_owner>();
  db_ = std::make_unique<detail::sqlite_db>(path_);
  group_ = own_group(std::make_unique<detail::sqlite_group>(
      *db_, [this] { return load_queue(false); }));
}

sqlite_store::~sqlite_store() {
  // An uncommitted group is discarded: closing the connection rolls it
  // back.
  close_group();
  db_.reset();
  owner_.reset();
}

std::string sqlite_store::owner_file(const std::string& path) {
  return detail::store_owner::file_of(path);
}

const std::string& sqlite_store::taken_over_from() const noexcept {
  return owner_->previous();
}

caf::expected<std::shared_ptr<sqlite_store>>
sqlite_store::open(caf::actor_system& sys, std::string path,
                   sqlite_options opts) {
  try {
    if (auto err = opts.validate())
      return err;
    // SQLite would open a temporary database, deleted on close.
    if (path.empty())
      return caf::make_error(pool_errc::invalid_option, std::string{"path"},
                             std::string{"must name the store's file"});
    std::shared_ptr<sqlite_store> result{new sqlite_store(sys, path)};
    if (auto err = result->init(opts))
      return err;
    return result;
  } catch (...) {
    return caf::make_error(pool_errc::store_failed, path,
                           "opening: " + exception_text());
  }
}

caf::error sqlite_store::init(const sqlite_options& opts) {
  wall_offset_ = detail::wall_offset(sys_);
  retention_ = opts.retention();
  auto& db = *db_;
  if (auto err = db.open(opts))
    return err;
  // Look before writing anything, the sidecar included: never touch
  // another program's file.
  bool fresh = false;
  int64_t version = 0;
  if (auto err = detail::check_compatible(db, fresh, version))
    return err;
  // Reading is safe beside an owner; everything from here on writes.
  if (auto err = owner_->acquire(path_))
    return err;
  if (auto err = detail::configure_file(db, opts, fresh))
    return err;
  // One transaction for the schema, the check of its meta data and the
  // recovery of running operations.
  if (auto err = db.exec("BEGIN IMMEDIATE", "starting a transaction"))
    return err;
  auto err = fresh ? detail::create_schema(db)
                   : detail::migrate_schema(db, version);
  if (!err && !fresh)
    err = detail::check_meta(db);
  if (!err && retention_)
    err = detail::add_retention_index(db);
  if (!err)
    err = db.prepare_statements();
  if (!err)
    err = load_queue(true);
  if (!err)
    // At-least-once: an attempt that was running when the previous process
    // stopped is handed out again.
    err = db.exec("UPDATE operations SET state = 0 WHERE state = 1",
                  "making running operations due again");
  if (!err)
    err = detail::read_last_operation_id(db, last_id_);
  if (!err)
    err = db.exec("COMMIT", "committing the opening transaction");
  if (err) {
    if (db.in_transaction())
      // Failing to roll back changes nothing: the store does not open and
      // closing the connection rolls back as well.
      static_cast<void>(db.exec("ROLLBACK", "rolling back"));
    return err;
  }
  return caf::none;
}

// -- the in-memory queue ------------------------------------------------------

size_t sqlite_store::drop(uint64_t operation) {
  auto i = queued_.find(operation);
  if (i == queued_.end())
    return 0;
  auto result = i->second;
  queued_.erase(i);
  queue_.remove(operation);
  return result;
}

caf::error sqlite_store::load_queue(bool at_open) {
  queue_.clear();
  queued_.clear();
  if (at_open)
    unfinished_.clear();
  auto what = std::string{"loading the queue"};
  auto& db = *db_;
  if (auto err = db.bind(sql::select_queue, {int64_t{at_open ? 1 : 0}}, what))
    return err;
  auto stmt = db.statement(sql::select_queue);
  caf::error err;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    auto id = static_cast<uint64_t>(sqlite3_column_int64(stmt, 0));
    auto state = static_cast<operation_state>(sqlite3_column_int(stmt, 1));
    auto attempt = static_cast<uint32_t>(sqlite3_column_int64(stmt, 2));
    auto due = detail::from_wall(sqlite3_column_int64(stmt, 3), wall_offset_);
    auto seq = static_cast<uint64_t>(sqlite3_column_int64(stmt, 4));
    caf::message payload;
    if (auto load_err = detail::load_column(sys_, stmt, 5, payload)) {
      err = caf::make_error(
          pool_errc::store_failed, path_,
          fmt::format("cannot read the payload of op#{}: {}; register its "
                      "types with the actor system (pool::configure, "
                      "add_message_type) before opening the store",
                      id, describe(load_err)));
      break;
    }
    job_options opts;
    if (sqlite3_column_type(stmt, 7) != SQLITE_NULL)
      if (auto load_err = detail::load_column(sys_, stmt, 7, opts)) {
        err = caf::make_error(pool_errc::store_failed, path_,
                              fmt::format("cannot read the options of op#{}: "
                                          "{}",
                                          id, describe(load_err)));
        break;
      }
    // Entries already due move to their band at the first call that knows
    // the time, in (due, seq) order.
    work_record entry{attempt_id{id, attempt}, payload};
    entry.priority = opts.priority();
    entry.concurrency_key = opts.concurrency_key();
    queue_.restore(std::move(entry), due, seq);
    ++queued_[id];
    if (at_open) {
      operation_record x;
      x.id = id;
      x.state = state;
      x.attempt = attempt;
      x.payload = std::move(payload);
      x.key = detail::column_text(stmt, 6);
      x.options = std::move(opts);
      x.due = due;
      unfinished_.push_back(std::move(x));
    }
  }
  if (!err && rc != SQLITE_DONE)
    err = db.fail(rc, what);
  db.reset(sql::select_queue);
  if (err)
    return err;
  if (at_open)
    for (auto& x : unfinished_)
      if (auto history_err = load_history(x.id, x.history))
        return history_err;
  for (auto& x : group_->kept())
    if (x.leaves_queue != 0)
      drop(x.leaves_queue);
  return caf::none;
}

// -- work_store ---------------------------------------------------------------

caf::error sqlite_store::push(work_record x, time_point due, time_point now) {
  try {
    auto data = push_data_of(x);
    if (!data)
      return std::move(data.error());
    auto& what = data->what;
    auto operation = x.id.operation;
    sql_value key_value = nullptr;
    if (data->key)
      key_value = *data->key;
    sql_value opts_value = nullptr;
    if (data->options)
      opts_value = std::move(*data->options);
    // A due time in the past is stored as `now`: the order by (due, seq)
    // then equals the FIFO order of the in-memory queue.
    auto seq = queue_.next_seq();
    change c{sql::upsert,
             {as_int64(operation), int64_t{x.id.attempt},
              detail::to_wall(std::max(due, now), wall_offset_), as_int64(seq),
              std::move(data->payload), std::move(key_value),
              std::move(opts_value)},
             0};
    if (auto err = group_->write(std::move(c), what, x.id))
      return err;
    pushed(operation);
    // One row per operation: a retry replaces the queued entry, if any.
    drop(operation);
    last_id_ = std::max(last_id_, operation);
    ++queued_[operation];
    queue_.push(std::move(x), due, now);
    return caf::none;
  } catch (...) {
    return on_exception();
  }
}

std::optional<work_record> sqlite_store::pop_due(time_point now) {
  try {
    if (group_->broken())
      return std::nullopt;
    auto result = queue_.pop_due(now);
    if (!result)
      return std::nullopt;
    auto operation = result->id.operation;
    if (auto i = queued_.find(operation);
        i != queued_.end() && --i->second == 0)
      queued_.erase(i);
    // A failed write rolls the group back and is reported by commit(); the
    // mark is written again then. The entry is handed out either way.
    static_cast<void>(group_->write(
        change{sql::mark_running, {as_int64(operation)}, operation},
        "marking " + to_string(result->id) + " running"));
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

std::optional<sqlite_store::time_point> sqlite_store::next_due(time_point now) {
  try {
    return queue_.next_due(now);
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

size_t sqlite_store::remove(uint64_t operation) {
  try {
    if (group_->broken())
      return 0;
    auto result = drop(operation);
    // A failed write is reported by commit(), which writes it again.
    auto wall_now = detail::to_wall(sys_.clock().now(), wall_offset_);
    static_cast<void>(group_->write(
        change{sql::mark_cancelled, {as_int64(operation), wall_now}, operation},
        fmt::format("cancelling op#{}", operation)));
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return 0;
  }
}

size_t sqlite_store::available(time_point now) {
  try {
    return queue_.available(now);
  } catch (...) {
    static_cast<void>(on_exception());
    return 0;
  }
}

size_t sqlite_store::delayed(time_point now) {
  try {
    return queue_.delayed(now);
  } catch (...) {
    static_cast<void>(on_exception());
    return 0;
  }
}

} // namespace pool
