#include "pool/pg_store.hpp"

// The PostgreSQL store's claims: due entries of the queue, higher priority
// first (with aging, higher level), leased to this store, and what a
// shepherd needs to run an entry that another one accepted (its priority,
// concurrency key, attempts and timeout).

#include <algorithm>
#include <utility>

#include <caf/actor_system.hpp>
#include <fmt/format.h>

#include "pg_batch.hpp"
#include "pg_conn.hpp"
#include "pg_group.hpp"
#include "pg_schema.hpp"
#include "pool/errors.hpp"
#include "pool/key_limits.hpp"
#include "store_codec.hpp"

namespace pool {

using detail::pg_sql;

namespace {

// The columns of a claim's RETURNING (pg_schema.cpp).
enum claim_column : int {
  id_col,
  attempt_col,
  payload_col,
  token_col,
  handout_col,
  level_col,
  priority_col,
  ckey_col,
  options_col,
};

/// Hand-out places of one claim: claim number << 20 | place (1 to 1000).
constexpr int claim_place_bits = 20;

} // namespace

caf::error pg_store::claim(time_point now) {
  auto t = to_server(now);
  auto body = [&]() -> caf::expected<size_t> {
    auto& db = *db_;
    // Entries of stores that are gone come back first (at most every
    // second: pg_leases.cpp).
    if (auto err = reclaim(now, false))
      return err;
    int64_t limit = static_cast<int64_t>(claim_size_->next());
    if (opts_.concurrency_limit() || key_limited_) {
      // Claims of the queue take turns until their group commits, so that
      // the count of live leases (of the queue, of each key) stays true.
      auto lock = db.run(detail::pg_statement_name(pg_sql::lock),
                         {opts_.schema() + "/queue/" + opts_.queue()},
                         "locking the queue's claims");
      if (!lock)
        return std::move(lock.error());
    }
    if (auto max = opts_.concurrency_limit()) {
      auto live = db.run(detail::pg_statement_name(pg_sql::count_leases),
                         {opts_.queue(), t}, "counting live leases");
      if (!live)
        return std::move(live.error());
      auto room =
          static_cast<int64_t>(*max) - detail::pg_int(live->get(), 0, 0);
      limit = std::min(limit, room);
      if (limit <= 0)
        return size_t{0};
    }
    auto lease_until = t + opts_.lease().count();
    // (A claim rolled back wastes its number: places only need to grow.)
    auto base = (++claims_) << claim_place_bits;
    std::vector<detail::db_value> args{opts_.queue(), t, limit, owner_,
                                       lease_until, base};
    auto statement = pg_sql::claim;
    if (key_limited_) {
      statement = pg_sql::claim_keyed;
      if (aging_)
        args.emplace_back(int64_t{std::max<int64_t>(aging_->count(), 1)});
      else
        args.emplace_back(nullptr);
      if (every_key_limit_)
        args.emplace_back(*every_key_limit_);
      else
        args.emplace_back(nullptr);
      args.emplace_back(own_keys_);
      args.emplace_back(own_limits_);
      if (every_key_rate_) {
        args.emplace_back(every_key_rate_->first);
        args.emplace_back(every_key_rate_->second);
      } else {
        args.emplace_back(nullptr);
        args.emplace_back(nullptr);
      }
      args.emplace_back(own_starts_);
      args.emplace_back(own_periods_);
    } else if (aging_) {
      statement = pg_sql::claim_aged;
      args.emplace_back(int64_t{std::max<int64_t>(aging_->count(), 1)});
    }
    auto res = db.run(detail::pg_statement_name(statement), args,
                      "claiming due entries");
    if (!res)
      return std::move(res.error());
    auto r = res->get();
    auto rows = PQntuples(r);
    if (key_rated_ && rows < limit) {
      // A key's rate may hold entries back: nothing notifies when one of
      // its tokens comes back, so the store looks again then.
      auto back = db.run(detail::pg_statement_name(pg_sql::key_token_back),
                         {opts_.queue(), t}, "reading when a key's start "
                                             "token comes back");
      if (!back)
        return std::move(back.error());
      if (!detail::pg_null(back->get(), 0, 0)) {
        auto at = from_server(detail::pg_int(back->get(), 0, 0));
        if (!recheck_at_ || at < *recheck_at_)
          recheck_at_ = at;
      }
    }
    claim_size_->claimed(static_cast<size_t>(limit), static_cast<size_t>(rows));
    claimed_at_ = now;
    // RETURNING has no order: hand out by (level, due, seq), as claimed,
    // which is the order of the hand-out places.
    std::vector<std::pair<int64_t, int>> order;
    for (int i = 0; i < rows; ++i)
      order.emplace_back(detail::pg_int(r, i, handout_col), i);
    std::sort(order.begin(), order.end());
    for (auto& place : order) {
      auto handout = place.first;
      auto i = place.second;
      auto id = static_cast<uint64_t>(detail::pg_int(r, i, id_col));
      auto attempt = static_cast<uint32_t>(detail::pg_int(r, i, attempt_col));
      auto token = detail::pg_int(r, i, token_col);
      auto load = [&](int col, auto& out, const char* what) -> caf::error {
        auto err = detail::load(sys_, PQgetvalue(r, i, col),
                                static_cast<size_t>(PQgetlength(r, i, col)),
                                out);
        if (!err)
          return caf::none;
        return caf::make_error(
            pool_errc::store_failed, db.target(),
            fmt::format("cannot read the {} of op#{}: {}; register its types "
                        "with the actor system (pool::configure, "
                        "add_message_type) before opening the store",
                        what, id, describe(err)));
      };
      work_record record{attempt_id{id, attempt}, caf::message{}};
      if (auto err = load(payload_col, record.payload, "payload"))
        return err;
      record.priority =
          static_cast<int32_t>(detail::pg_int(r, i, priority_col));
      if (!detail::pg_null(r, i, ckey_col))
        record.concurrency_key = detail::pg_text(r, i, ckey_col);
      // Options that do not read (a newer build's) leave the pool's
      // defaults: the entry still runs.
      job_options opts;
      if (!detail::pg_null(r, i, options_col)
          && !load(options_col, opts, "options")) {
        record.max_attempts = opts.max_attempts();
        record.budget = opts.attempt_timeout();
      }
      held_[id] = held_attempt{attempt, token};
      claimed_.push_back(claimed_entry{std::move(record), true, handout});
    }
    return static_cast<size_t>(rows);
  };
  auto claimed = detail::in_group_or_alone(
      *group_, *db_, body, [this] { static_cast<void>(after_rollback()); },
      true);
  if (!claimed)
    return std::move(claimed.error());
  if (!group_->open())
    for (auto& x : claimed_)
      x.in_group = false;
  counts_.available -= std::min(counts_.available, *claimed);
  return caf::none;
}

void pg_store::set_priority_aging(std::optional<caf::timespan> step) {
  aging_ = step;
}

void pg_store::set_key_limits(const key_flow_options& limits) {
  // Encoded once: every claim of the queue sends them.
  key_rated_ = limits.rate_limited();
  key_limited_ = limits.concurrency_limited() || key_rated_;
  every_key_limit_.reset();
  every_key_rate_.reset();
  if (auto& every = limits.every_key()) {
    if (every->concurrency)
      every_key_limit_ = static_cast<int64_t>(*every->concurrency);
    if (every->rate)
      every_key_rate_.emplace(static_cast<int64_t>(every->rate->starts),
                              every->rate->per.count());
  }
  detail::pg_array keys{25};
  detail::pg_array concurrency{23};
  detail::pg_array starts{20};
  detail::pg_array periods{20};
  for (auto& [key, limit] : limits.keys()) {
    keys.add_text(key);
    concurrency.add_int(limit.concurrency ? *limit.concurrency : 0);
    starts.add_int(limit.rate ? static_cast<int64_t>(limit.rate->starts) : 0);
    periods.add_int(limit.rate ? limit.rate->per.count() : 0);
  }
  own_keys_ = keys.bytes();
  own_limits_ = concurrency.bytes();
  own_starts_ = starts.bytes();
  own_periods_ = periods.bytes();
}

} // namespace pool
