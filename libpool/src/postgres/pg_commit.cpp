#include "pool/pg_store.hpp"

// The PostgreSQL store's group commit and its outages. Changes go into one
// open transaction that `commit()` ends. When the server is out of reach
// (stopped, restarting, the connection cut), the group keeps every change,
// pushes included, and the first commit that reaches the server again
// writes them: the queue holds the answers meanwhile, so callers see the
// outage as latency. Once an outage outlasts `outage_limit`, the pushes
// are given up (`lost_pushes`): the queue refuses what waits, with an
// error that says so. Outcomes and failures stay kept until a commit goes
// through, for as long as the store lives (docs/postgres.md, "Outages").

#include <algorithm>
#include <chrono>
#include <utility>

#include <caf/actor_system.hpp>
#include <fmt/format.h>

#include "pg_batch.hpp"
#include "pg_conn.hpp"
#include "pg_group.hpp"
#include "pg_listener.hpp"
#include "pg_schema.hpp"
#include "pool/duration_text.hpp"
#include "pool/errors.hpp"

namespace pool {

using detail::pg_change;
using detail::pg_sql;

namespace {

/// Outcome ids per notification (payloads stay below PostgreSQL's 8000
/// bytes).
constexpr size_t ids_per_notification = 300;

} // namespace

bool pg_store::unreachable() const noexcept {
  return !db_->ok();
}

caf::error pg_store::write(pg_change c, const std::string& what) {
  auto err = group_->write(std::move(c), what);
  if (!err || !unreachable() || group_->broken())
    return err;
  // The group keeps what a lost connection rolled back (it drops only
  // what the server refused, which needs a connection).
  if (!outage_since_)
    outage_since_ = sys_.clock().now();
  return caf::none;
}

caf::error pg_store::commit() {
  try {
    fenced_.clear();
    given_up_.clear();
    if (handed_ > handed_written_) {
      // How far this store handed out its claims: an entry beyond that had
      // not started, should this process die (pg_leases.cpp).
      pg_change c;
      c.statement = pg_sql::handed;
      c.args = {owner_, handed_};
      static const std::string what = "noting what was handed out";
      static_cast<void>(write(std::move(c), what)); // (kept, see below)
    }
    auto handed = handed_;
    if (notify_work_ || !notify_finished_.empty()) {
      // Sent with the commit: listeners hear of it once it is visible.
      // The batch goes first: what it refuses did not finish here.
      static_cast<void>(group_->flush()); // an error rolled back: see below
      auto sent = group_->write_once([&]() -> caf::expected<size_t> {
        batch_->drop_refused(notify_finished_);
        detail::pg_array payloads{25}; // text[]: one round trip for all
        if (notify_work_)
          payloads.add_text(owner_ + " w");
        for (size_t i = 0; i < notify_finished_.size();
             i += ids_per_notification) {
          auto text = owner_ + " d ";
          auto end =
              std::min(notify_finished_.size(), i + ids_per_notification);
          for (auto j = i; j < end; ++j) {
            if (j > i)
              text += ',';
            text += std::to_string(notify_finished_[j]);
          }
          payloads.add_text(text);
        }
        auto res = db_->run(detail::pg_statement_name(pg_sql::notify),
                            {channel_, payloads.bytes()}, "notifying");
        if (!res)
          return std::move(res.error());
        return payloads.size();
      });
      static_cast<void>(sent); // a failure rolled the group back: see below
    }
    auto err = group_->commit();
    if (err)
      return after_failed_commit(std::move(err));
    handed_written_ = std::max(handed_written_, handed);
    fenced_ = batch_->refused();
    batch_->clear();
    batch_->forget_given_up();
    if (!fenced_.empty())
      counts_.stale = true;
    notify_work_ = false;
    notify_finished_.clear();
    for (auto& x : claimed_)
      x.in_group = false;
    if (!unreachable()) {
      outage_since_.reset();
      outage_gave_up_ = false;
      pushes_since_.reset();
    }
    return caf::none;
  } catch (...) {
    return on_exception();
  }
}

caf::error pg_store::after_failed_commit(caf::error err) {
  if (unreachable() && !group_->broken()) {
    auto now = sys_.clock().now();
    if (!outage_since_)
      outage_since_ = now;
    auto lasted = now - *outage_since_;
    if (lasted < opts_.outage_limit())
      return err; // every change waits for the next commit
    // Pushes are given up only by an attempt to reach the server that
    // failed after they began to wait (the connection tries at most every
    // 2 s; a failure from before says nothing of the server now): a
    // submit made once the server is back is not refused by the outage.
    // When the outage first outlasts the limit, they waited since it began.
    if (auto since = waiting_pushes()) {
      if (!pushes_since_)
        pushes_since_ = *since;
      if (db_->last_try() < *pushes_since_)
        return err; // the next attempt decides
    }
    err = caf::make_error(
        pool_errc::store_failed, db_->target(),
        fmt::format("the server has been out of reach for {} (longer than "
                    "outage_limit, {}): the submits that waited for it were "
                    "not stored; submit them again once it is back; last "
                    "error: {}",
                    duration_text(std::chrono::duration_cast<
                                  std::chrono::milliseconds>(lasted)),
                    duration_text(opts_.outage_limit()),
                    detail::detail_of(err)));
  }
  // Not an outage (the server refused the group), or too long a one: the
  // pushes are given up; the group keeps the other changes.
  for (auto& c : group_->kept()) {
    if (c.statement != pg_sql::push)
      continue;
    auto attempt = std::get<int64_t>(c.args[2]);
    if (batch_->given_up(c))
      continue;
    batch_->give_up(c.operation, attempt);
    given_up_.push_back(
        attempt_id{c.operation, static_cast<uint32_t>(attempt)});
  }
  // Past the limit, the queue refuses whatever waits (a submit refused
  // because its key could not be checked, an outcome), pushes or not: a
  // placeholder (no operation has id 0) says that the store gave up.
  if (given_up_.empty() && outage_since_)
    given_up_.push_back(attempt_id{0, 0});
  pushes_since_.reset();
  outage_gave_up_ = true;
  return err;
}

std::optional<std::chrono::steady_clock::time_point>
pg_store::waiting_pushes() const {
  auto live = std::any_of(group_->kept().begin(), group_->kept().end(),
                          [this](const pg_change& c) {
                            return c.statement == pg_sql::push
                                   && !batch_->given_up(c);
                          });
  if (!live)
    return std::nullopt;
  // Waiting since the outage began, if nothing was given up in it yet.
  if (!outage_gave_up_)
    return std::chrono::steady_clock::time_point{};
  return std::chrono::steady_clock::now();
}

caf::error pg_store::after_rollback() {
  // Claims of the group are void: their entries are queued again.
  claimed_.erase(std::remove_if(claimed_.begin(), claimed_.end(),
                                [this](const claimed_entry& x) {
                                  if (x.in_group)
                                    held_.erase(x.record.id.operation);
                                  return x.in_group;
                                }),
                 claimed_.end());
  // (What the group notifies stays: its kept changes come again.)
  counts_.stale = true;
  return caf::none;
}

void pg_store::discard() {
  notify_work_ = false;
  notify_finished_.clear();
  durable_store::discard();
}

std::vector<uint64_t> pg_store::fenced() const {
  return fenced_;
}

} // namespace pool
