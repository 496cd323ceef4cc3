#include "pool/pg_store.hpp"

// The dead set of a `pg_store`: the operations that failed for good, listed
// for a restarted pool and deleted when an operator retries or discards
// them.

#include <unordered_map>

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

std::vector<failed_operation> pg_store::failed_operations(size_t limit,
                                                          caf::timespan max_age,
                                                          time_point now) {
  std::vector<failed_operation> result;
  try {
    if (group_->broken() || limit == 0 || reconnect_if_idle())
      return result;
    auto server_now = to_server(now);
    std::vector<detail::db_value> args{
        opts_.queue(), server_now - max_age.count(),
        static_cast<int64_t>(std::min<size_t>(limit, INT64_MAX))};
    auto name = detail::pg_statement_name(pg_sql::select_failed);
    auto rows = group_->read(
        [&] { return db_->run(name, args, "listing failed operations"); });
    if (!rows)
      return result;
    auto res = rows->get();
    std::unordered_map<uint64_t, size_t> index;
    for (int i = 0; i < PQntuples(res); ++i) {
      auto load = [&](int col, auto& out) {
        return detail::load(sys_, PQgetvalue(res, i, col),
                            static_cast<size_t>(PQgetlength(res, i, col)), out);
      };
      failed_operation x;
      auto& rec = x.record;
      rec.id = static_cast<uint64_t>(detail::pg_int(res, i, 0));
      rec.state = operation_state::failed;
      rec.key = detail::pg_text(res, i, 2);
      // A row that does not load is left out (it stays for `lookup`).
      if (load(1, rec.payload) ||
          (!detail::pg_null(res, i, 3) && load(3, rec.options)) ||
          (!detail::pg_null(res, i, 4) && load(4, rec.error)) ||
          !is(rec.error, pool_errc::operation_failed))
        continue;
      x.ago = caf::timespan{server_now - detail::pg_int(res, i, 5)};
      index.emplace(rec.id, result.size());
      result.push_back(std::move(x));
    }
    name = detail::pg_statement_name(pg_sql::select_failed_history);
    auto history = group_->read(
        [&] { return db_->run(name, args, "reading attempt histories"); });
    if (!history)
      return result;
    auto h = history->get();
    for (int i = 0; i < PQntuples(h); ++i) {
      auto at = index.find(static_cast<uint64_t>(detail::pg_int(h, i, 0)));
      if (at == index.end())
        continue;
      attempt_failure f;
      f.attempt = static_cast<uint32_t>(detail::pg_int(h, i, 1));
      f.after_submit = caf::timespan{detail::pg_int(h, i, 2)};
      if (detail::load(sys_, PQgetvalue(h, i, 3),
                       static_cast<size_t>(PQgetlength(h, i, 3)), f.reason))
        continue;
      result[at->second].record.history.push_back(std::move(f));
    }
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return {};
  }
}

caf::error pg_store::forget_failed(uint64_t operation) {
  try {
    if (auto& broken = group_->broken())
      return broken;
    pg_change c;
    c.statement = pg_sql::forget_failed;
    c.args = {detail::as_int64(operation)};
    return write(std::move(c),
                 fmt::format("forgetting the failed op#{}", operation));
  } catch (...) {
    return on_exception();
  }
}

} // namespace pool
