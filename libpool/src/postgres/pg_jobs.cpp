#include "pool/pg_store.hpp"

// The jobs view over a whole shared queue: a page of every store's
// operations, and the dead set's retry and discard for failures that any
// store recorded. Operator requests, not the per-operation path: the
// statements run unprepared.

#include <algorithm>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <fmt/format.h>

#include "pg_conn.hpp"
#include "pg_group.hpp"
#include "pg_schema.hpp"
#include "pool/errors.hpp"
#include "store_codec.hpp"

namespace pool {

namespace {

using detail::db_value;

// One page. $1 queue, $2 after, $3 scan budget, $4 id (0: any), $5 now,
// $6 ended since, $7 job_state (NULL: any), $8 key (NULL: any),
// $9 priority (NULL: any), $10 limit, $11 payloads (0 or 1). Walks the
// next $3 operations by id (the primary key's order: the walk stops as
// soon as the page is full), classifies each as `job_state` (NULL: done,
// discarded, or ended before $6), numbers them (`rn`: how far the walk
// got), and picks the page. A claimed entry that its store has not handed
// to a worker yet (beyond the store's `owners.handed`, as `reclaim` tells
// started attempts) is waiting, not running.
constexpr const char* list_sql =
    "SELECT p.id, p.js, p.attempt, p.priority, p.key, p.ckey, p.submitted, "
    "p.due, p.finished, p.owner, CASE WHEN $11::int = 1 THEN o.payload END, "
    "CASE WHEN p.js >= 4 THEN o.error END, p.rn FROM (SELECT * FROM (SELECT "
    "id, attempt, due, priority, key, ckey, submitted, finished, owner, "
    "row_number() OVER (ORDER BY id) AS rn, CASE WHEN state = 1 AND "
    "coalesce(o.handout <= coalesce((SELECT handed FROM {s}.owners w WHERE "
    "w.owner = o.owner), 0), true) THEN 0 WHEN state = 1 THEN 1 WHEN "
    "state = 0 AND attempt > 1 THEN 3 WHEN state = 0 AND due > $5 THEN 2 "
    "WHEN state = 0 THEN 1 WHEN state = 3 AND finished >= $6 THEN 4 WHEN "
    "state = 4 AND finished >= $6 THEN 5 END AS js FROM {s}.operations o "
    "WHERE "
    "queue = $1 AND id > $2 AND ($4::bigint = 0 OR id = $4) ORDER BY id "
    "LIMIT $3) AS w WHERE js IS NOT NULL AND ($7::int IS NULL OR js = $7) "
    "AND ($8::text IS NULL OR key = $8 OR ckey = $8) AND ($9::int IS NULL OR "
    "priority = $9) ORDER BY id LIMIT $10) AS p JOIN {s}.operations o ON "
    "o.id = p.id ORDER BY p.id";

// A page that is not full walked its whole range: how many operations
// that was, and the last id. $1 queue, $2 after, $3 scan budget.
constexpr const char* walked_sql =
    "SELECT count(*), coalesce(max(id), 0) FROM (SELECT id FROM "
    "{s}.operations WHERE queue = $1 AND id > $2 ORDER BY id LIMIT $3) AS w";

// The unfinished operations: queued (counted up to $2) and held by some
// store. $1 queue, $2 cap.
constexpr const char* unfinished_sql =
    "SELECT (SELECT count(*) FROM (SELECT 1 FROM {s}.operations WHERE queue "
    "= $1 AND state = 0 LIMIT $2) AS q), (SELECT count(*) FROM "
    "{s}.operations WHERE queue = $1 AND state = 1)";

// Queued operations counted exactly for a page's `total`; beyond, the
// store's own counts (a million take 100-120 ms to count).
constexpr int64_t exact_total = 100'000;

// The attempt histories of $1 (an array of ids), oldest first.
constexpr const char* history_sql =
    "SELECT operation, attempt, after_submit, reason FROM {s}.failures "
    "WHERE operation = ANY($1::bigint[]) ORDER BY operation, n";

// The ended operations an operator acts on, locked until the commit.
// $1 queue, $2 after, $3 id (0: any), $4 ended since, $5 state (NULL: 3 or
// 4), $6 key (NULL: any), $7 priority (NULL: any), $8 limit.
constexpr const char* take_sql =
    "SELECT id, state, attempt, payload, key, options, error, finished FROM "
    "{s}.operations WHERE queue = $1 AND id > $2 AND ($3::bigint = 0 OR id = "
    "$3) AND state IN (3, 4) AND finished >= $4 AND ($5::int IS NULL OR "
    "state = $5) AND ($6::text IS NULL OR key = $6 OR ckey = $6) AND "
    "($7::int IS NULL OR priority = $7) ORDER BY id LIMIT $8 FOR UPDATE SKIP "
    "LOCKED";

// As `take_sql` without the lock, for ids above $2: how many were left
// (at most $8).
constexpr const char* left_sql =
    "SELECT count(*) FROM (SELECT 1 FROM {s}.operations WHERE queue = $1 AND "
    "id > $2 AND ($3::bigint = 0 OR id = $3) AND state IN (3, 4) AND "
    "finished >= $4 AND ($5::int IS NULL OR state = $5) AND ($6::text IS "
    "NULL OR key = $6 OR ckey = $6) AND ($7::int IS NULL OR priority = $7) "
    "LIMIT $8) AS x";

// Retried: gone, with their histories (ON DELETE CASCADE). $1 ids.
constexpr const char* delete_sql =
    "DELETE FROM {s}.operations WHERE id = ANY($1::bigint[])";

// Discarded: a note that `lookup` reads until the retention prunes it.
// $1 ids, $2 now.
constexpr const char* discard_sql =
    "UPDATE {s}.operations SET state = 5, finished = $2 WHERE id = "
    "ANY($1::bigint[])";

db_value or_null(const std::string& x) {
  return x.empty() ? db_value{nullptr} : db_value{x};
}

template <class T>
db_value or_null(const std::optional<T>& x) {
  return x ? db_value{static_cast<int64_t>(*x)} : db_value{nullptr};
}

// `ids` as a PostgreSQL array literal.
std::string id_array(const std::vector<uint64_t>& ids) {
  std::string result = "{";
  for (auto id : ids) {
    if (result.size() > 1)
      result += ',';
    result += std::to_string(id);
  }
  return result + "}";
}

// The error the caller of a job that ended got, when its row has none.
caf::error ended_error(bool cancelled, uint64_t id) {
  return cancelled ? caf::make_error(pool_errc::cancelled, id)
                   : caf::make_error(pool_errc::operation_failed, id);
}

using histories = std::unordered_map<uint64_t, std::vector<attempt_failure>>;

// The rows of `history_sql` by operation, oldest first; a failure that
// does not load is left out.
histories histories_of(caf::actor_system& sys, const PGresult* h) {
  histories result;
  for (int i = 0; i < PQntuples(h); ++i) {
    attempt_failure f;
    auto id = static_cast<uint64_t>(detail::pg_int(h, i, 0));
    f.attempt = static_cast<uint32_t>(detail::pg_int(h, i, 1));
    f.after_submit = caf::timespan{detail::pg_int(h, i, 2)};
    if (detail::load(sys, PQgetvalue(h, i, 3),
                     static_cast<size_t>(PQgetlength(h, i, 3)), f.reason))
      continue;
    result[id].push_back(std::move(f));
  }
  return result;
}

} // namespace

caf::expected<job_page> pg_store::list_jobs(const job_filter& filter,
                                            caf::timespan dead_age,
                                            time_point now) {
  try {
    if (auto& broken = group_->broken())
      return broken;
    if (auto err = reconnect_if_idle())
      return err;
    auto t = to_server(now);
    std::vector<db_value> args{
        opts_.queue(),
        detail::as_int64(filter.after),
        static_cast<int64_t>(job_scan_budget),
        detail::as_int64(filter.id),
        t,
        t - dead_age.count(),
        or_null(filter.state),
        or_null(filter.key),
        or_null(filter.priority),
        static_cast<int64_t>(filter.limit),
        int64_t{filter.payloads ? 1 : 0}};
    auto text = detail::pg_statement_text(list_sql, opts_.schema());
    auto rows = group_->read(
        [&] { return db_->query(text, args, "listing the queue's jobs"); });
    if (!rows)
      return std::move(rows.error());
    auto res = rows->get();
    job_page page;
    std::unordered_map<uint64_t, size_t> index;
    std::vector<uint64_t> with_history;
    for (int i = 0; i < PQntuples(res); ++i) {
      auto load = [&](int col, auto& out) {
        return detail::load(sys_, PQgetvalue(res, i, col),
                            static_cast<size_t>(PQgetlength(res, i, col)), out);
      };
      job_info x;
      x.id = static_cast<uint64_t>(detail::pg_int(res, i, 0));
      x.state = static_cast<job_state>(detail::pg_int(res, i, 1));
      x.attempt = static_cast<uint32_t>(detail::pg_int(res, i, 2));
      x.priority = static_cast<int32_t>(detail::pg_int(res, i, 3));
      x.key = detail::pg_text(res, i, 4);
      x.concurrency_key = detail::pg_text(res, i, 5);
      x.age = caf::timespan{t - detail::pg_int(res, i, 6)};
      auto ended = x.state == job_state::failed
                   || x.state == job_state::cancelled;
      // Running: since when is not stored (the holder's jobs view says).
      if (ended)
        x.since = caf::timespan{t - detail::pg_int(res, i, 8)};
      else if (x.state != job_state::running)
        x.since = caf::timespan{t - detail::pg_int(res, i, 7)};
      if (x.state == job_state::running)
        x.holder = detail::pg_text(res, i, 9);
      if (!detail::pg_null(res, i, 10)) {
        caf::message payload;
        x.payload = load(10, payload) ? std::string{"<unreadable>"}
                                      : job_payload_text(payload);
      }
      if (ended) {
        caf::error err;
        if (detail::pg_null(res, i, 11) || load(11, err))
          err = ended_error(x.state == job_state::cancelled, x.id);
        x.last_error = describe(err);
      }
      if (x.attempt > 1 || ended) {
        index.emplace(x.id, page.jobs.size());
        with_history.push_back(x.id);
      }
      page.jobs.push_back(std::move(x));
    }
    // As the shepherd's own view: more may follow if the page is full or
    // the walk used its budget (unless it asked for one id).
    if (page.jobs.size() == filter.limit) {
      auto n = PQntuples(res);
      page.scanned = static_cast<uint64_t>(detail::pg_int(res, n - 1, 12));
      if (filter.id == 0)
        page.next_after = page.jobs.back().id;
    } else {
      auto walked = group_->read([&] {
        return db_->query(detail::pg_statement_text(walked_sql,
                                                    opts_.schema()),
                          {args[0], args[1], args[2]}, "listing the queue");
      });
      if (!walked)
        return std::move(walked.error());
      page.scanned = static_cast<uint64_t>(detail::pg_int(walked->get(), 0, 0));
      if (filter.id == 0 && page.scanned == job_scan_budget)
        page.next_after =
            static_cast<uint64_t>(detail::pg_int(walked->get(), 0, 1));
    }
    auto counted = group_->read([&] {
      return db_->query(detail::pg_statement_text(unfinished_sql,
                                                  opts_.schema()),
                        {args[0], exact_total}, "counting the queue's jobs");
    });
    if (!counted)
      return std::move(counted.error());
    auto queued = detail::pg_int(counted->get(), 0, 0);
    if (queued == exact_total) { // (a long queue: as the claims count it)
      refresh_counts(now);
      queued = std::max(queued, static_cast<int64_t>(counts_.available
                                                     + counts_.delayed));
    }
    page.total = static_cast<uint64_t>(queued
                                       + detail::pg_int(counted->get(), 0, 1));
    if (with_history.empty())
      return page;
    auto h = group_->read([&] {
      return db_->query(detail::pg_statement_text(history_sql, opts_.schema()),
                        {id_array(with_history)}, "reading attempt histories");
    });
    if (!h)
      return std::move(h.error());
    for (auto& [id, xs] : histories_of(sys_, h->get())) {
      auto& x = page.jobs[index.at(id)];
      if (x.state == job_state::retrying && !xs.empty())
        x.last_error = describe(xs.back().reason);
      x.history = job_history(xs);
    }
    return page;
  } catch (...) {
    return on_exception();
  }
}

caf::expected<ended_taken>
pg_store::take_ended(const job_filter& filter, size_t limit,
                     caf::timespan dead_age, bool discard, time_point now) {
  try {
    if (limit == 0)
      return ended_taken{};
    std::optional<int64_t> state;
    if (filter.state == job_state::failed)
      state = static_cast<int64_t>(operation_state::failed);
    else if (filter.state == job_state::cancelled)
      state = static_cast<int64_t>(operation_state::cancelled);
    else if (filter.state) // (stopped: a drain here gives them back)
      return ended_taken{};
    auto t = to_server(now);
    auto after = filter.after;
    if (filter.id != 0)
      after = std::max(after, filter.id - 1);
    std::vector<db_value> args{opts_.queue(),
                               detail::as_int64(after),
                               detail::as_int64(filter.id),
                               t - dead_age.count(),
                               or_null(state),
                               or_null(filter.key),
                               or_null(filter.priority),
                               static_cast<int64_t>(
                                   std::min<size_t>(limit, INT64_MAX))};
    auto sql = [&](const char* text) {
      return detail::pg_statement_text(text, opts_.schema());
    };
    auto body = [&]() -> caf::expected<ended_taken> {
      // Outcomes of this group still batched must be in the table first.
      if (auto err = group_->flush())
        return err;
      auto rows = db_->query(sql(take_sql), args, "taking ended operations");
      if (!rows)
        return std::move(rows.error());
      auto res = rows->get();
      ended_taken result;
      std::vector<uint64_t> ids;
      std::unordered_map<uint64_t, size_t> index;
      for (int i = 0; i < PQntuples(res); ++i) {
        auto load = [&](int col, auto& out) {
          return detail::load(sys_, PQgetvalue(res, i, col),
                              static_cast<size_t>(PQgetlength(res, i, col)),
                              out);
        };
        failed_operation x;
        auto& rec = x.record;
        rec.id = static_cast<uint64_t>(detail::pg_int(res, i, 0));
        rec.state = static_cast<operation_state>(detail::pg_int(res, i, 1));
        rec.attempt = static_cast<uint32_t>(detail::pg_int(res, i, 2));
        rec.key = detail::pg_text(res, i, 4);
        // A retry needs the input; a row whose input does not load stays.
        if (!discard && load(3, rec.payload))
          continue;
        if (!detail::pg_null(res, i, 5) && load(5, rec.options))
          rec.options = job_options{};
        if (detail::pg_null(res, i, 6) || load(6, rec.error))
          rec.error = ended_error(rec.state == operation_state::cancelled,
                                  rec.id);
        x.ago = caf::timespan{t - detail::pg_int(res, i, 7)};
        index.emplace(rec.id, result.ops.size());
        ids.push_back(rec.id);
        result.ops.push_back(std::move(x));
      }
      if (ids.empty())
        return result;
      if (!discard) {
        auto h = db_->query(sql(history_sql), {id_array(ids)},
                            "reading attempt histories");
        if (!h)
          return std::move(h.error());
        for (auto& [id, xs] : histories_of(sys_, h->get()))
          result.ops[index.at(id)].record.history = std::move(xs);
      }
      auto changed =
          discard ? db_->query(sql(discard_sql), {id_array(ids), t},
                               "noting discarded operations")
                  : db_->query(sql(delete_sql), {id_array(ids)},
                               "deleting retried operations");
      if (!changed)
        return std::move(changed.error());
      if (static_cast<size_t>(PQntuples(res)) == limit) {
        auto left_args = args;
        left_args[1] = detail::as_int64(ids.back());
        left_args[7] = static_cast<int64_t>(job_scan_budget);
        auto left = db_->query(sql(left_sql), left_args,
                               "counting ended operations left");
        if (!left)
          return std::move(left.error());
        result.left = static_cast<uint64_t>(detail::pg_int(left->get(), 0, 0));
      }
      return result;
    };
    return detail::in_group_or_alone(*group_, *db_, body, [] {});
  } catch (...) {
    return on_exception();
  }
}

} // namespace pool
