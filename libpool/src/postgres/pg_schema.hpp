#pragma once

// Private to `pg_store`: the schema in PostgreSQL, its migrations, and the
// store's statements.

#include <cstdint>
#include <string>

#include <caf/error.hpp>

#include "pg_conn.hpp"

namespace pool::detail {

/// The first key of every advisory lock of the pool: "CAFP".
constexpr int32_t pg_lock_space = 0x43414650;

/// The first key of the session locks that say a store of `schema` lives
/// (the second is its id block): other than `pg_lock_space`.
int32_t pg_owner_lock_space(const std::string& schema);

/// The prepared statements of a store; their text is in pg_schema.cpp.
enum class pg_sql {
  push,
  claim,
  claim_aged,
  claim_keyed,
  key_token_back,
  count_leases,
  lock,
  try_lock,
  finish_held,
  finish_queued,
  add_failure,
  add_failure_held,
  cancel_queued,
  cancel_held,
  find_key,
  key_owner,
  select_operation,
  select_history,
  absent_owners,
  reclaim,
  release,
  release_held,
  owner_lock,
  handed,
  forget_owners,
  counts,
  prune,
  notify,
  next_block,
  server_time,
  select_failed,
  select_failed_history,
  forget_failed,
  count, // number of statements, not a statement
};

/// The name under which statement `s` is prepared.
const std::string& pg_statement_name(pg_sql s);

/// Creates the schema `schema` or migrates it to version `upto`, in one
/// transaction under an advisory lock (several stores may open at once):
/// all or nothing. Refuses, with `store_incompatible`, a schema of that
/// name that holds another program's tables or a newer version.
caf::error pg_migrate(pg_conn& db, const std::string& schema, int upto);

/// The statements of `pg_batch`. They run unprepared: planned for the
/// arrays of each call (see pg_batch.hpp).
enum class pg_batch_sql {
  push_many,
  finish_many,
  renew_held,
  renew_owned,
};

/// `text` for `schema`: every `{s}` the quoted schema name, every `{now}`
/// the server's clock in nanoseconds (for statements run unprepared).
std::string pg_statement_text(const char* text, const std::string& schema);

/// The text of batch statement `s` for `schema`.
std::string pg_batch_statement(pg_batch_sql s, const std::string& schema);

/// Prepares every statement for `schema`.
caf::error pg_prepare(pg_conn& db, const std::string& schema);

/// Whether `name` is a schema name this store accepts: lower-case
/// letters, digits and `_`, not starting with a digit, 1 to 63 bytes.
bool pg_valid_schema_name(const std::string& name);

} // namespace pool::detail
