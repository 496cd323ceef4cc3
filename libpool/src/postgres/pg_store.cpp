#include "pool/pg_store.hpp"

// The PostgreSQL store: opening, the queue (pushes, claims, counts) and
// group commit. Outcomes, keys, leases and pruning are in pg_records.cpp.

#include <algorithm>
#include <tuple>
#include <utility>

#include <unistd.h>

#include <caf/actor_system.hpp>
#include <fmt/format.h>

#include "pg_batch.hpp"
#include "pg_conn.hpp"
#include "pg_group.hpp"
#include "pg_listener.hpp"
#include "pg_schema.hpp"
#include "pool/errors.hpp"
#include "store_codec.hpp"

namespace pool {

using detail::pg_change;
using detail::pg_sql;

namespace {

constexpr uint64_t block_bits = 32;

/// Counts are read again at least this often while asked for.
constexpr int64_t counts_max_age_ns = 1'000'000'000;

/// ... and at most this often.
constexpr int64_t counts_min_age_ns = 20'000'000;

/// Outcome ids per notification (payloads stay below PostgreSQL's 8000
/// bytes).
constexpr size_t ids_per_notification = 300;

uint64_t fnv1a(const std::string& x) {
  uint64_t h = 14695981039346656037ull;
  for (auto c : x) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0)
    return "unknown";
  return buf;
}

} // namespace

// -- construction -------------------------------------------------------------

pg_store::pg_store(caf::actor_system& sys, std::string conninfo,
                   pg_options opts)
    : durable_store(sys), opts_(std::move(opts)),
      conninfo_(std::move(conninfo)) {
  // nop
}

pg_store::~pg_store() {
  // What this store holds goes back first, while its session lock still
  // says it lives; then the listener: its thread must not outlive the
  // store. Closing the connection discards an uncommitted group.
  release_all();
  listener_.reset();
  close_group();
  batch_.reset();
  db_.reset();
}

caf::expected<std::shared_ptr<pg_store>>
pg_store::open(caf::actor_system& sys, std::string conninfo, pg_options opts) {
  try {
    if (auto err = opts.validate())
      return err;
    if (auto err = detail::check_conninfo(conninfo))
      return err;
    std::shared_ptr<pg_store> result{
        new pg_store(sys, std::move(conninfo), std::move(opts))};
    if (auto err = result->init())
      return err;
    return result;
  } catch (...) {
    return caf::make_error(pool_errc::store_failed, std::string{"postgres"},
                           "opening: " + exception_text());
  }
}

caf::error pg_store::init() {
  using std::chrono::duration_cast;
  auto timeout = duration_cast<std::chrono::seconds>(opts_.connect_timeout());
  db_ = std::make_unique<detail::pg_conn>(conninfo_, timeout);
  auto& db = *db_;
  if (auto err = db.connect())
    return err;
  if (auto err = detail::pg_migrate(db, opts_.schema(), schema_version))
    return err;
  if (auto err = detail::pg_prepare(db, opts_.schema()))
    return err;
  auto block = db.run(detail::pg_statement_name(pg_sql::next_block), {},
                      "reserving a block of operation ids");
  if (!block)
    return std::move(block.error());
  auto number = static_cast<uint64_t>(detail::pg_int(block->get(), 0, 0));
  if (number >= (uint64_t{1} << (63 - block_bits)))
    return caf::make_error(pool_errc::store_failed, db.target(),
                           std::string{"no operation ids left (sequence "
                                       "id_blocks is exhausted)"});
  id_base_ = number << block_bits;
  last_id_ = id_base_;
  owner_ = fmt::format("{}:{}:{}", host_name(), ::getpid(), number);
  channel_ = fmt::format("caf_pool_{:016x}",
                         fnv1a(opts_.schema() + '\0' + opts_.queue()));
  // Every connection of the store holds its session lock while it lives:
  // other stores see at once when its process is gone (pg_leases.cpp).
  lock_space_ = detail::pg_owner_lock_space(opts_.schema());
  block_ = static_cast<int64_t>(number);
  detail::pg_conn::setup_step lock{
      "SELECT pg_try_advisory_lock_shared($1::integer, $2::integer)",
      {int64_t{lock_space_}, block_},
      "taking the store's session lock"};
  if (auto err = db.query(lock.text, lock.params, lock.what); !err)
    return std::move(err.error());
  db.set_setup({lock});
  if (auto err = sync_clock())
    return err;
  seen_connects_ = db.connects();
  connected_at_ = to_server(sys_.clock().now());
  batch_ = std::make_unique<detail::pg_batch>(opts_.schema());
  claim_size_ = std::make_unique<detail::pg_claim_size>(opts_.claim_batch());
  group_ = own_group(std::make_unique<detail::pg_group>(
      db, *batch_, [this] { return after_rollback(); }));
  // The listener reconnects first after an outage (within a second): its
  // connection takes the lock again and keeps this store's leases alive
  // until the store itself renews them.
  detail::pg_conn::setup_step renew{
      detail::pg_batch_statement(detail::pg_batch_sql::renew_owned,
                                 opts_.schema()),
      {owner_, int64_t{opts_.lease().count()}},
      "renewing the store's leases"};
  listener_ = std::make_unique<detail::pg_listener>(
      conninfo_, timeout, channel_, owner_, opts_.safety_poll(),
      std::vector<detail::pg_conn::setup_step>{lock, std::move(renew)});
  return listener_->start();
}

const std::string& pg_store::target() const noexcept {
  return db_->target();
}

caf::error pg_store::sync_clock() {
  auto before = sys_.clock().now();
  auto res = db_->run(detail::pg_statement_name(pg_sql::server_time), {},
                      "reading the server's clock");
  auto after = sys_.clock().now();
  if (!res)
    return std::move(res.error());
  auto middle = before + (after - before) / 2;
  clock_offset_ = detail::pg_int(res->get(), 0, 0) - detail::to_wall(middle, 0);
  return caf::none;
}

int64_t pg_store::to_server(time_point x) const noexcept {
  return detail::to_wall(x, clock_offset_);
}

pg_store::time_point pg_store::from_server(int64_t x) const noexcept {
  return detail::from_wall(x, clock_offset_);
}

caf::error pg_store::reconnect_if_idle() {
  if (group_->open() || db_->ok())
    return caf::none;
  return db_->reconnect();
}

caf::error pg_store::lease_lost(uint64_t operation,
                                const std::string& why) const {
  return detail::lease_lost_error(operation, why);
}

// -- the queue ----------------------------------------------------------------

caf::error pg_store::push(work_record x, time_point due, time_point now) {
  try {
    auto data = push_data_of(x);
    if (!data)
      return std::move(data.error());
    auto& what = data->what;
    auto op = x.id.operation;
    auto held = held_.find(op);
    pg_change c;
    c.statement = pg_sql::push;
    c.operation = op;
    c.fenced = true;
    c.keyed = data->key != nullptr;
    c.args = {detail::as_int64(op),
              opts_.queue(),
              int64_t{x.id.attempt},
              nullptr,
              std::move(data->payload),
              nullptr,
              to_server(now),
              nullptr,
              nullptr,
              int64_t{x.priority},
              nullptr,
              nullptr};
    if (due > now)
      c.args[3] = to_server(due);
    if (c.keyed)
      c.args[5] = *data->key;
    if (held != held_.end()) {
      c.args[7] = owner_;
      c.args[8] = held->second.token;
    }
    if (!x.concurrency_key.empty())
      c.args[10] = x.concurrency_key;
    if (data->options)
      c.args[11] = std::move(*data->options);
    // Not reported lost by a rollback: kept for the next commit like any
    // other change (after_failed_commit gives pushes up when it must).
    if (auto err = write(std::move(c), what)) {
      batch_->unrefuse(op); // refused to its caller, here and now
      return err;
    }
    pushed(op);
    if (held != held_.end())
      held_.erase(held);
    if (op > id_base_ && op - id_base_ < (uint64_t{1} << block_bits))
      last_id_ = std::max(last_id_, op);
    if (due <= now) {
      ++counts_.available;
    } else {
      ++counts_.delayed;
      auto at = to_server(due);
      if (!counts_.next_due || at < *counts_.next_due)
        counts_.next_due = at;
    }
    notify_work_ = true;
    return caf::none;
  } catch (...) {
    return on_exception();
  }
}

std::optional<work_record> pg_store::pop_due(time_point now) {
  try {
    if (group_->broken())
      return std::nullopt;
    // An error reads as "nothing due": the next call tries again.
    if (claimed_.empty() && claim(now))
      return std::nullopt;
    if (claimed_.empty())
      return std::nullopt;
    auto result = std::move(claimed_.front().record);
    handed_ = std::max(handed_, claimed_.front().handout);
    claimed_.erase(claimed_.begin());
    if (claimed_.empty())
      claim_size_->drained(now - claimed_at_);
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

void pg_store::refresh_counts(time_point now) {
  reclaim_if_due(now);
  auto t = to_server(now);
  auto due_passed = counts_.next_due && *counts_.next_due <= t;
  if (!counts_.stale && !due_passed && t - counts_.read_at < counts_max_age_ns)
    return;
  if (counts_.read_at != 0 && t - counts_.read_at < counts_min_age_ns
      && !counts_.unreachable)
    return;
  auto read = [&]() -> caf::expected<detail::pg_result> {
    if (auto err = reconnect_if_idle())
      return err;
    return group_->read([&] {
      return db_->run(detail::pg_statement_name(pg_sql::counts),
                      {opts_.queue(), t}, "counting the queue's entries");
    });
  }();
  // Estimates until the next read; nothing to claim while the server is
  // out of reach (reconnecting, its listener wakes the queue).
  counts_.unreachable = !read && unreachable();
  if (!read) {
    counts_.stale = true;
    return;
  }
  auto res = read->get();
  counts_.available = static_cast<size_t>(detail::pg_int(res, 0, 0));
  counts_.delayed = static_cast<size_t>(detail::pg_int(res, 0, 1));
  counts_.next_due.reset();
  if (!detail::pg_null(res, 0, 2))
    counts_.next_due = detail::pg_int(res, 0, 2);
  counts_.read_at = t;
  counts_.stale = false;
}

size_t pg_store::available(time_point now) {
  try {
    refresh_counts(now);
    if (counts_.unreachable)
      return claimed_.size();
    return counts_.available + claimed_.size();
  } catch (...) {
    static_cast<void>(on_exception());
    return 0;
  }
}

size_t pg_store::delayed(time_point now) {
  try {
    refresh_counts(now);
    return counts_.delayed;
  } catch (...) {
    static_cast<void>(on_exception());
    return 0;
  }
}

std::optional<pg_store::time_point> pg_store::next_due(time_point now) {
  try {
    refresh_counts(now);
    if (counts_.unreachable)
      return std::nullopt;
    std::optional<time_point> result;
    if (counts_.next_due)
      result = from_server(*counts_.next_due);
    // Leases of a store that is gone come back when its grace ends.
    if (recheck_at_ && (!result || *recheck_at_ < *result))
      result = std::max(*recheck_at_, now);
    return result;
  } catch (...) {
    static_cast<void>(on_exception());
    return std::nullopt;
  }
}

uint64_t pg_store::last_operation_id() {
  return last_id_;
}

void pg_store::set_wakeup(std::function<void()> f) {
  listener_->set_wakeup(std::move(f));
}

store_notifications pg_store::poll_notifications() {
  auto result = listener_->take();
  if (reread_ && db_->ok()) {
    // A lookup failed while the server was out of reach: what the
    // shepherd awaits is read again.
    reread_ = false;
    result.missed = true;
  }
  if (result.work || result.missed)
    counts_.stale = true;
  return result;
}

} // namespace pool
