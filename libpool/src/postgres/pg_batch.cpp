#include "pg_batch.hpp"

#include <algorithm>
#include <unordered_set>
#include <variant>

#include <fmt/format.h>

#include "pg_conn.hpp"
#include "pg_group.hpp"
#include "pg_schema.hpp"

namespace pool::detail {

namespace {

void put32(std::vector<char>& out, uint32_t x) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((x >> shift) & 0xff));
}

void put64(std::vector<char>& out, uint64_t x) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((x >> shift) & 0xff));
}

/// Adds `x` (NULL, an integer, text or bytes) to `column`.
void add_value(pg_array& column, const db_value& x) {
  if (std::holds_alternative<std::nullptr_t>(x))
    column.add_null();
  else if (auto i = std::get_if<int64_t>(&x))
    column.add_int(*i);
  else if (auto s = std::get_if<std::string>(&x))
    column.add_bytes(s->data(), s->size());
  else
    column.add_bytes(std::get<std::vector<char>>(x).data(),
                     std::get<std::vector<char>>(x).size());
}

} // namespace

// -- pg_array -----------------------------------------------------------------

void pg_array::add_int(int64_t x) {
  if (oid_ == 23) {
    put32(body_, 4);
    put32(body_, static_cast<uint32_t>(static_cast<int32_t>(x)));
  } else {
    put32(body_, 8);
    put64(body_, static_cast<uint64_t>(x));
  }
  ++size_;
}

void pg_array::add_bytes(const char* data, size_t size) {
  put32(body_, static_cast<uint32_t>(size));
  body_.insert(body_.end(), data, data + size);
  ++size_;
}

void pg_array::add_null() {
  put32(body_, 0xffffffffu); // length -1
  nulls_ = true;
  ++size_;
}

std::vector<char> pg_array::bytes() const {
  std::vector<char> out;
  out.reserve(20 + body_.size());
  put32(out, 1);             // dimensions
  put32(out, nulls_ ? 1 : 0); // has NULLs
  put32(out, oid_);
  put32(out, static_cast<uint32_t>(size_));
  put32(out, 1); // lower bound
  out.insert(out.end(), body_.begin(), body_.end());
  return out;
}

// -- pg_batch -----------------------------------------------------------------

pg_batch::pg_batch(const std::string& schema)
    : push_sql_(pg_batch_statement(pg_batch_sql::push_many, schema)),
      finish_sql_(pg_batch_statement(pg_batch_sql::finish_many, schema)) {
  // nop
}

bool pg_batch::takes(const pg_change& x) noexcept {
  if (x.statement == pg_sql::push)
    return !x.keyed && std::holds_alternative<std::nullptr_t>(x.args[7]);
  return x.statement == pg_sql::finish_held;
}

void pg_batch::add(const pg_change& x) {
  if (x.statement == pg_sql::push) {
    // $1 id, $2 queue, $3 attempt, $4 due, $5 payload, $7 submitted,
    // $10 priority, $11 concurrency key, $12 options.
    auto& c = pushes_;
    if (c.ids.empty())
      c.queue = std::get<std::string>(x.args[1]);
    c.ids.push_back(x.operation);
    c.pending.insert(x.operation);
    add_value(c.id, x.args[0]);
    add_value(c.attempt, x.args[2]);
    add_value(c.due, x.args[3]);
    add_value(c.payload, x.args[4]);
    add_value(c.submitted, x.args[6]);
    add_value(c.priority, x.args[9]);
    add_value(c.ckey, x.args[10]);
    add_value(c.options, x.args[11]);
  } else {
    // $1 id, $2 state, $3 result, $4 error, $5 finished, $6 owner,
    // $7 token.
    auto& c = finishes_;
    if (c.ids.empty())
      c.owner = std::get<std::string>(x.args[5]);
    c.ids.push_back(x.operation);
    add_value(c.id, x.args[0]);
    add_value(c.state, x.args[1]);
    add_value(c.result, x.args[2]);
    add_value(c.error, x.args[3]);
    add_value(c.finished, x.args[4]);
    add_value(c.token, x.args[6]);
  }
}

caf::error pg_batch::flush(pg_conn& db) {
  // Pushes concern new operations and outcomes held ones: no row is in
  // both, so their order between the two kinds does not matter.
  if (!pushes_.ids.empty()) {
    auto& c = pushes_;
    if (auto err = send(db, push_sql_,
                        {c.id.bytes(), c.attempt.bytes(), c.due.bytes(),
                         c.payload.bytes(), c.submitted.bytes(), c.queue,
                         c.priority.bytes(), c.ckey.bytes(),
                         c.options.bytes()},
                        c.ids,
                        fmt::format("storing {} operations", c.ids.size())))
      return err;
    pushes_ = push_columns{};
  }
  if (!finishes_.ids.empty()) {
    auto& c = finishes_;
    if (auto err = send(db, finish_sql_,
                        {c.id.bytes(), c.state.bytes(), c.result.bytes(),
                         c.error.bytes(), c.finished.bytes(), c.token.bytes(),
                         c.owner},
                        c.ids,
                        fmt::format("recording {} outcomes", c.ids.size())))
      return err;
    finishes_ = finish_columns{};
  }
  return caf::none;
}

caf::error pg_batch::send(pg_conn& db, const std::string& sql,
                          const std::vector<db_value>& params,
                          const std::vector<uint64_t>& sent,
                          const std::string& what) {
  auto res = db.query(sql, params, what);
  if (!res)
    return std::move(res.error());
  // RETURNING names each row the statement changed.
  auto rows = PQntuples(res->get());
  if (static_cast<size_t>(rows) == sent.size())
    return caf::none;
  std::unordered_set<uint64_t> changed;
  for (int i = 0; i < rows; ++i)
    changed.insert(static_cast<uint64_t>(pg_int(res->get(), i, 0)));
  for (auto id : sent)
    if (changed.count(id) == 0)
      refused_.push_back(id);
  return caf::none;
}

bool pg_batch::given_up(const pg_change& x) const {
  if (given_up_.empty() || x.statement != pg_sql::push)
    return false;
  auto attempt = std::get_if<int64_t>(&x.args[2]);
  return attempt != nullptr && given_up_.count({x.operation, *attempt}) > 0;
}

void pg_batch::drop_refused(std::vector<uint64_t>& ids) const {
  if (refused_.empty())
    return;
  std::unordered_set<uint64_t> refused{refused_.begin(), refused_.end()};
  ids.erase(std::remove_if(ids.begin(), ids.end(),
                           [&](uint64_t id) { return refused.count(id) > 0; }),
            ids.end());
}

void pg_batch::clear() noexcept {
  pushes_ = push_columns{};
  finishes_ = finish_columns{};
  refused_.clear();
}

} // namespace pool::detail
