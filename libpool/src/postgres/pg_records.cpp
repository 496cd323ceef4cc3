#include "pool/pg_store.hpp"

// The records of a `pg_store`: outcomes, attempt histories, unique keys,
// lookups, leases and pruning. The queue itself is in pg_store.cpp.

#include <algorithm>
#include <unordered_set>

#include <caf/actor_system.hpp>
#include <fmt/format.h>

#include "pg_batch.hpp"
#include "pg_conn.hpp"
#include "pg_group.hpp"
#include "pg_schema.hpp"
#include "pool/errors.hpp"
#include "store_codec.hpp"

namespace pool {

using detail::pg_change;
using detail::pg_sql;

namespace {

std::string name_of(pg_sql s) {
  return detail::pg_statement_name(s);
}

/// Keys whose lookup failed, remembered at most (each is forgotten at its
/// next push or lookup).
constexpr size_t max_unchecked_keys = 100000;

} // namespace

// -- keys ---------------------------------------------------------------------

caf::error pg_store::set_key(uint64_t operation, std::string key) {
  try {
    if (auto& broken = group_->broken())
      return broken;
    // Checked here for a clear answer; the unique index decides at the
    // push, should another store take the key in the meantime.
    // A key that `find_key` found free: finished operations count as well,
    // from the same time on (one with the key may have finished since).
    auto since = key_since_.find(key);
    auto owner = [&]() -> caf::expected<detail::pg_result> {
      if (auto err = reconnect_if_idle())
        return err;
      return group_->read([&] {
        if (since != key_since_.end())
          return db_->run(name_of(pg_sql::find_key),
                          {opts_.queue(), key, since->second},
                          "looking up key " + key);
        return db_->run(name_of(pg_sql::key_owner), {opts_.queue(), key},
                        "looking up key " + key);
      });
    }();
    if (since != key_since_.end())
      key_since_.erase(since);
    // A key whose lookup of finished operations failed (the server was
    // away) is not taken blind: an operation with it may have finished
    // meanwhile (the unique index covers live ones only).
    auto unchecked = unchecked_keys_.erase(key) > 0;
    if ((!owner && unreachable()) || unchecked)
      // (Nor can a finished operation with this key be found.)
      return caf::make_error(
          pool_errc::store_failed, db_->target(),
          fmt::format("the server is out of reach, so unique key {} cannot "
                      "be checked: the submit is refused; submit it again "
                      "once the server is back ({})",
                      key,
                      owner ? std::string{"its lookup failed"}
                            : detail::detail_of(owner.error())));
    if (!owner)
      return std::move(owner.error());
    if (PQntuples(owner->get()) > 0) {
      auto other = static_cast<uint64_t>(detail::pg_int(owner->get(), 0, 0));
      if (other != operation)
        return caf::make_error(pool_errc::key_taken, key, other);
    }
    pending_keys_[operation] = std::move(key);
    return caf::none;
  } catch (...) {
    return on_exception();
  }
}

std::optional<uint64_t> pg_store::find_key(const std::string& key,
                                           time_point now,
                                           caf::timespan window) {
  auto unchecked = [&] {
    if (unchecked_keys_.size() < max_unchecked_keys)
      unchecked_keys_.insert(key);
    return std::nullopt;
  };
  try {
    if (group_->broken() || reconnect_if_idle())
      return unchecked();
    auto since = to_server(now) - window.count();
    auto res = group_->read([&] {
      return db_->run(name_of(pg_sql::find_key), {opts_.queue(), key, since},
                      "finding a key");
    });
    // An error reads as "not found"; a push with the key is refused until
    // a lookup of it succeeds (see set_key).
    if (!res)
      return unchecked();
    unchecked_keys_.erase(key);
    if (PQntuples(res->get()) == 0) {
      // (Checked again at the push: see set_key.)
      if (key_since_.size() < max_unchecked_keys)
        key_since_[key] = since;
      return std::nullopt;
    }
    return static_cast<uint64_t>(detail::pg_int(res->get(), 0, 0));
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

// -- outcomes and histories ---------------------------------------------------

caf::error pg_store::note_failure(uint64_t operation,
                                  const attempt_failure& x) {
  try {
    if (auto& broken = group_->broken())
      return broken;
    auto held = held_.find(operation);
    if (held == held_.end())
      return lease_lost(operation, "this store does not hold the operation "
                                   "(never claimed it here, or lost its "
                                   "lease): the failure is stale");
    auto what =
        fmt::format("recording the failure of op#{}/{}", operation, x.attempt);
    std::vector<char> reason;
    if (auto err = detail::save(sys_, x.reason, reason))
      return caf::make_error(
          pool_errc::store_failed, db_->target(),
          what + ": cannot serialize the error: " + describe(err));
    pg_change c;
    c.statement = pg_sql::add_failure_held;
    c.operation = operation;
    c.fenced = true;
    c.args = {detail::as_int64(operation),
              int64_t{x.attempt},
              int64_t{x.after_submit.count()},
              std::move(reason),
              owner_,
              held->second.token};
    return write(std::move(c), what);
  } catch (...) {
    return on_exception();
  }
}

caf::error pg_store::finish(uint64_t operation, const caf::message& result,
                            time_point now) {
  try {
    std::vector<char> blob;
    if (auto err = detail::save(sys_, result, blob))
      return caf::make_error(pool_errc::store_failed, db_->target(),
                             fmt::format("recording the result of op#{}: "
                                         "cannot serialize it: {}",
                                         operation, describe(err)));
    return finish_impl(operation, static_cast<int>(operation_state::done),
                       std::move(blob), {}, now);
  } catch (...) {
    return on_exception();
  }
}

caf::error pg_store::finish(uint64_t operation, const caf::error& failure,
                            time_point now) {
  try {
    if (is(failure, pool_errc::drain_deadline))
      return stopped(operation);
    std::vector<char> blob;
    if (auto err = detail::save(sys_, failure, blob))
      return caf::make_error(pool_errc::store_failed, db_->target(),
                             fmt::format("recording the failure of op#{}: "
                                         "cannot serialize it: {}",
                                         operation, describe(err)));
    // (A running operation's cancel ends here: stored as cancelled, as a
    // queued one's `remove` is.)
    auto state = is(failure, pool_errc::cancelled) ? operation_state::cancelled
                                                   : operation_state::failed;
    return finish_impl(operation, static_cast<int>(state), {}, std::move(blob),
                       now);
  } catch (...) {
    return on_exception();
  }
}

caf::error pg_store::finish_impl(uint64_t operation, int state,
                                 std::vector<char> result,
                                 std::vector<char> error, time_point now) {
  if (auto& broken = group_->broken())
    return broken;
  detail::db_value result_value = nullptr;
  detail::db_value error_value = nullptr;
  if (!result.empty())
    result_value = std::move(result);
  if (!error.empty())
    error_value = std::move(error);
  pg_change c;
  c.operation = operation;
  c.fenced = true;
  c.args = {detail::as_int64(operation), int64_t{state},
            std::move(result_value), std::move(error_value), to_server(now)};
  // A held attempt only with its lease; an operation this store never
  // claimed only while nobody runs it (a queued one failed by a drain).
  auto held = held_.find(operation);
  if (held != held_.end()) {
    c.statement = pg_sql::finish_held;
    c.args.emplace_back(owner_);
    c.args.emplace_back(held->second.token);
  } else {
    c.statement = pg_sql::finish_queued;
  }
  auto err = write(std::move(c),
                   fmt::format("recording the outcome of op#{}", operation));
  if (err)
    return err;
  held_.erase(operation);
  notify_finished_.push_back(operation);
  return caf::none;
}

caf::error pg_store::stopped(uint64_t operation) {
  // Its pool stopped it (a drain's deadline): not the operation's failure.
  // A held attempt goes back unstarted, at once, for another store to run;
  // a queued entry stays queued.
  if (auto& broken = group_->broken())
    return broken;
  auto held = held_.find(operation);
  if (held == held_.end())
    return caf::none;
  pg_change c;
  c.statement = pg_sql::release_held;
  c.operation = operation;
  c.fenced = true;
  c.args = {detail::as_int64(operation), owner_, held->second.token};
  if (auto err = write(std::move(c), fmt::format("giving back op#{}",
                                                 operation)))
    return err;
  held_.erase(held);
  claimed_.erase(std::remove_if(claimed_.begin(), claimed_.end(),
                                [operation](const claimed_entry& x) {
                                  return x.record.id.operation == operation;
                                }),
                 claimed_.end());
  notify_work_ = true;
  counts_.stale = true;
  return caf::none;
}

size_t pg_store::remove(uint64_t operation) {
  try {
    if (group_->broken())
      return 0;
    size_t result = 0;
    auto claimed = std::find_if(claimed_.begin(), claimed_.end(),
                                [operation](const claimed_entry& x) {
                                  return x.record.id.operation == operation;
                                });
    if (claimed != claimed_.end()) {
      claimed_.erase(claimed);
      result = 1;
    }
    pg_change c;
    c.operation = operation;
    c.fenced = true;
    c.args = {detail::as_int64(operation), to_server(sys_.clock().now())};
    auto held = held_.find(operation);
    if (held != held_.end()) {
      c.statement = pg_sql::cancel_held;
      c.args.emplace_back(owner_);
      c.args.emplace_back(held->second.token);
    } else {
      c.statement = pg_sql::cancel_queued;
    }
    // Refused when another store runs or finished it: nothing to remove.
    if (write(std::move(c), fmt::format("cancelling op#{}", operation)))
      return result;
    if (held == held_.end()) {
      result = 1;
      counts_.stale = true;
    } else {
      held_.erase(held);
    }
    notify_finished_.push_back(operation);
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return 0;
  }
}

std::optional<operation_record> pg_store::lookup(uint64_t operation) {
  try {
    if (group_->broken())
      return std::nullopt;
    // Unreadable now (the server is out of reach): not finished as far as
    // this store knows, with the reason; the shepherd looks up again.
    auto unreadable = [&](caf::error err) {
      reread_ = true;
      operation_record x;
      x.id = operation;
      x.state = operation_state::queued;
      x.error = std::move(err);
      return std::optional<operation_record>{std::move(x)};
    };
    if (auto err = reconnect_if_idle())
      return unreadable(std::move(err));
    auto row = group_->read([&] {
      return db_->run(name_of(pg_sql::select_operation),
                      {detail::as_int64(operation)}, "looking up");
    });
    if (!row)
      return unreadable(std::move(row.error()));
    if (PQntuples(row->get()) == 0)
      return std::nullopt;
    auto res = row->get();
    operation_record x;
    x.id = operation;
    x.state = static_cast<operation_state>(detail::pg_int(res, 0, 0));
    x.attempt = static_cast<uint32_t>(detail::pg_int(res, 0, 1));
    x.key = detail::pg_text(res, 0, 5);
    auto load = [&](int col, auto& out) {
      return detail::load(sys_, PQgetvalue(res, 0, col),
                          static_cast<size_t>(PQgetlength(res, 0, col)), out);
    };
    if (load(2, x.payload))
      return std::nullopt;
    if (!detail::pg_null(res, 0, 3) && load(3, x.result))
      return std::nullopt;
    if (!detail::pg_null(res, 0, 4) && load(4, x.error))
      return std::nullopt;
    if (!detail::pg_null(res, 0, 6) && load(6, x.options))
      return std::nullopt;
    if (detail::pg_int(res, 0, 7) == 0)
      return x; // no failed attempt: no history to read
    auto history = group_->read([&] {
      return db_->run(name_of(pg_sql::select_history),
                      {detail::as_int64(operation)},
                      "reading an attempt history");
    });
    if (!history)
      return unreadable(std::move(history.error()));
    auto h = history->get();
    for (int i = 0; i < PQntuples(h); ++i) {
      attempt_failure f;
      f.attempt = static_cast<uint32_t>(detail::pg_int(h, i, 0));
      f.after_submit = caf::timespan{detail::pg_int(h, i, 1)};
      if (detail::load(sys_, PQgetvalue(h, i, 2),
                       static_cast<size_t>(PQgetlength(h, i, 2)), f.reason))
        return std::nullopt;
      x.history.push_back(std::move(f));
    }
    return x;
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

// -- retention ----------------------------------------------------------------

std::optional<caf::timespan> pg_store::prune_interval() const {
  if (!opts_.retention())
    return std::nullopt;
  caf::timespan lo = std::chrono::seconds(1);
  caf::timespan hi = std::chrono::minutes(10);
  return std::clamp(*opts_.retention() / 10, lo, hi);
}

caf::expected<size_t> pg_store::prune(time_point now, size_t limit) {
  try {
    if (!opts_.retention() || limit == 0)
      return size_t{0};
    auto before = to_server(now) - opts_.retention()->count();
    auto body = [&]() -> caf::expected<size_t> {
      // One store of the database prunes at a time; the others skip.
      auto lock = db_->run(name_of(pg_sql::try_lock),
                           {opts_.schema() + "/prune"}, "locking for pruning");
      if (!lock)
        return std::move(lock.error());
      if (detail::pg_int(lock->get(), 0, 0) == 0)
        return size_t{0};
      auto res =
          db_->run(name_of(pg_sql::prune),
                   {opts_.queue(), before,
                    static_cast<int64_t>(std::min<size_t>(limit, INT64_MAX))},
                   "pruning finished operations");
      if (!res)
        return std::move(res.error());
      return static_cast<size_t>(std::atoll(PQcmdTuples(res->get())));
    };
    return detail::in_group_or_alone(*group_, *db_, body, [] {});
  } catch (...) {
    return on_exception();
  }
}

} // namespace pool
