#include "pool/pg_store.hpp"

// The PostgreSQL store's leases: renewing what this store holds, taking
// back what other stores cannot run any more, and giving back what this
// store holds when it closes. An attempt is spent only by running:
//
// - An entry is claimed unstarted. Each claimed entry has a place in its
//   store's hand-out order (`handout`: claim number << 20 | place in the
//   claim), and with each group the store notes the place of the last
//   entry it handed out to run (`owners.handed`): one row per store and
//   group, not one per entry. An entry beyond it never started. (A pool
//   over PostgreSQL takes out nothing ahead of its workers, so a hand-out
//   is a start; one that the process dies before noting counts as not
//   started: a window of a commit interval.)
// - Each connection of a store holds a shared session lock (the owners'
//   lock space, its id block) while it lives. A store whose lock no
//   session holds for `owner_grace` has lost its process (or every
//   connection): its leases are taken back at once, without waiting for
//   them to expire.
// - A lease taken back (expired, or its owner gone) from an attempt that
//   had started is a failed attempt (history `lease_lost`, attempt + 1,
//   due now); from one that had not, the entry goes back as it was, in its
//   place, and no attempt is spent.
// - A store that closes gives back everything it holds at once, unstarted:
//   entries claimed and not run, and attempts its pool stopped.
// - After a (re)connect, a store takes nothing back for `reconnect_grace`:
//   after an outage, the other stores get the time to reconnect, take
//   their locks again and renew their leases (their listeners do so first,
//   within a second), so that leases that expired while the server was
//   away are not taken from stores that live.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <unordered_map>
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

using detail::pg_sql;

namespace {

/// Leases taken back per call.
constexpr int64_t reclaim_batch = 100;

/// A store's lock must be gone this long before its leases are taken back
/// (a listener whose connection broke takes it again within a second).
constexpr auto owner_grace = std::chrono::seconds(2);

/// Claims look for stores that are gone at most this often (renewals
/// always do).
constexpr auto owner_check = std::chrono::seconds(1);

/// A store that (re)connected takes nothing back for this long (by the
/// server's clock).
constexpr auto reconnect_grace = std::chrono::seconds(2);

std::string name_of(pg_sql s) {
  return detail::pg_statement_name(s);
}

} // namespace

std::optional<caf::timespan> pg_store::lease_interval() const {
  return opts_.lease() / 3;
}

caf::expected<std::vector<uint64_t>> pg_store::renew_leases(time_point now) {
  try {
    // The server's clock drifts from ours: measure again (outside a
    // transaction; a failure keeps the old offset).
    if (!group_->open() && db_->ok())
      static_cast<void>(sync_clock());
    auto t = to_server(now);
    auto body = [&]() -> caf::expected<std::vector<uint64_t>> {
      // Only what this store holds: a row it let go is not kept alive.
      std::unordered_set<uint64_t> renewed;
      if (!held_.empty()) {
        detail::pg_array ids{20};
        detail::pg_array tokens{20};
        for (auto& [id, x] : held_) {
          ids.add_int(detail::as_int64(id));
          tokens.add_int(x.token);
        }
        auto res = db_->query(
            detail::pg_batch_statement(detail::pg_batch_sql::renew_held,
                                       opts_.schema()),
            {ids.bytes(), tokens.bytes(), owner_, t + opts_.lease().count()},
            "renewing leases");
        if (!res)
          return std::move(res.error());
        for (int i = 0; i < PQntuples(res->get()); ++i)
          renewed.insert(
              static_cast<uint64_t>(detail::pg_int(res->get(), i, 0)));
      }
      std::vector<uint64_t> lost;
      for (auto& [id, x] : held_)
        if (renewed.count(id) == 0)
          lost.push_back(id);
      if (auto err = reclaim(now, true))
        return err;
      return lost;
    };
    auto lost = detail::in_group_or_alone(*group_, *db_, body, [] {}, true);
    if (!lost)
      return std::move(lost.error());
    for (auto id : *lost) {
      held_.erase(id);
      claimed_.erase(std::remove_if(claimed_.begin(), claimed_.end(),
                                    [id](const claimed_entry& x) {
                                      return x.record.id.operation == id;
                                    }),
                     claimed_.end());
    }
    return std::move(*lost);
  } catch (...) {
    return on_exception();
  }
}

caf::expected<std::vector<std::string>>
pg_store::gone_owners(time_point now) {
  owners_checked_ = now;
  auto res = db_->run(name_of(pg_sql::absent_owners),
                      {opts_.queue(), int64_t{lock_space_}, owner_},
                      "looking for stores that are gone");
  if (!res)
    return std::move(res.error());
  std::unordered_map<std::string, time_point> absent;
  std::vector<std::string> gone;
  for (int i = 0; i < PQntuples(res->get()); ++i) {
    auto owner = detail::pg_text(res->get(), i, 0);
    auto known = absent_since_.find(owner);
    auto since = known != absent_since_.end() ? known->second : now;
    if (now - since >= owner_grace)
      gone.push_back(owner);
    absent.emplace(std::move(owner), since);
  }
  absent_since_ = std::move(absent);
  return gone;
}

caf::error pg_store::reclaim(time_point now, bool always) {
  auto t = to_server(now);
  if (db_->connects() != seen_connects_) {
    seen_connects_ = db_->connects();
    connected_at_ = t;
  }
  auto grace_left = caf::timespan{reconnect_grace}
                    - caf::timespan{t - connected_at_};
  if (grace_left > caf::timespan{0}) {
    recheck_at_ = now + grace_left;
    return caf::none;
  }
  if (!always && now - owners_checked_ < owner_check)
    return caf::none;
  auto gone = gone_owners(now);
  if (!gone)
    return std::move(gone.error());
  // A store found absent is gone once its grace ends: look again then,
  // even if nothing else wakes this store.
  recheck_at_.reset();
  for (auto& [owner, since] : absent_since_) {
    auto at = std::max(since + owner_grace, now + owner_check);
    if (!recheck_at_ || at < *recheck_at_)
      recheck_at_ = at;
  }
  detail::pg_array names{25};
  for (auto& x : *gone)
    names.add_text(x);
  auto res = db_->run(name_of(pg_sql::reclaim),
                      {opts_.queue(), t, reclaim_batch, names.bytes()},
                      "taking back leases");
  if (!res)
    return std::move(res.error());
  auto rows = PQntuples(res->get());
  for (int i = 0; i < rows; ++i) {
    auto r = res->get();
    auto started = detail::pg_int(r, i, 3) != 0;
    if (!started)
      continue; // back as it was: no attempt spent
    auto id = detail::pg_int(r, i, 0);
    auto attempt = detail::pg_int(r, i, 1);
    auto owner = detail::pg_text(r, i, 2);
    auto submitted = detail::pg_int(r, i, 4);
    auto why =
        detail::pg_int(r, i, 5) != 0
            ? fmt::format("the process of {} is gone (its connections to the "
                          "server closed); taken back by {}",
                          owner, owner_)
            : fmt::format("the lease of {} expired; taken back by {}", owner,
                          owner_);
    auto reason = caf::make_error(pool_errc::lease_lost,
                                  fmt::format("op#{}/{}", id, attempt), why);
    std::vector<char> blob;
    if (auto err = detail::save(sys_, reason, blob))
      return err;
    auto added = db_->run(name_of(pg_sql::add_failure),
                          {id, attempt, t - submitted, std::move(blob)},
                          "recording a lost lease");
    if (!added)
      return std::move(added.error());
  }
  if (rows < reclaim_batch && !gone->empty()) {
    // Stores that are gone and hold nothing any more: forgotten.
    auto forgot = db_->run(name_of(pg_sql::forget_owners), {names.bytes()},
                           "forgetting stores that are gone");
    if (!forgot)
      return std::move(forgot.error());
  }
  if (rows > 0) {
    // With this transaction: the others may claim them once it commits.
    detail::pg_array payload{25};
    payload.add_text(owner_ + " w");
    auto sent = db_->run(name_of(pg_sql::notify), {channel_, payload.bytes()},
                         "notifying");
    if (!sent)
      return std::move(sent.error());
    counts_.stale = true;
  }
  return caf::none;
}

void pg_store::reclaim_if_due(time_point now) {
  if (!recheck_at_ || now < *recheck_at_ || unreachable() || group_->broken())
    return;
  recheck_at_.reset();
  auto body = [&]() -> caf::expected<size_t> {
    if (auto err = reclaim(now, false))
      return err;
    return size_t{0};
  };
  // A failure is tried again at the next claim.
  static_cast<void>(detail::in_group_or_alone(*group_, *db_, body, [] {}));
  counts_.stale = true;
}

void pg_store::release_all() noexcept {
  try {
    if (!db_ || !group_ || !db_->ok())
      return; // the server cannot hear it: the session lock tells instead
    // An open group was never acknowledged: what it holds runs again.
    if (db_->in_transaction())
      static_cast<void>(db_->exec("ROLLBACK", "rolling back"));
    auto res = db_->run(name_of(pg_sql::release), {owner_},
                        "giving back what the store holds");
    if (!res || std::atoll(PQcmdTuples(res->get())) == 0)
      return;
    detail::pg_array payload{25};
    payload.add_text(owner_ + " w");
    static_cast<void>(db_->run(name_of(pg_sql::notify),
                               {channel_, payload.bytes()}, "notifying"));
  } catch (...) {
    // Closing anyway: the session lock goes with the connection.
  }
}

} // namespace pool
