#pragma once

// Private to `sqlite_store`: the file's schema, its statements, and the
// checks and settings applied when a file is opened.

#include <caf/error.hpp>

#include "sqlite_db.hpp"

namespace pool::detail {

/// The SQL text of statement `s`.
const char* statement_text(sql s);

/// Refuses a file that is not a store of this schema version, without
/// writing anything. Sets `fresh` for an empty file that still needs its
/// schema.
caf::error check_compatible(sqlite_db& db, bool& fresh, int64_t& version);

/// Sets the journal mode, the synchronous level and the size limit and,
/// for an existing file with `verify_on_open`, checks its integrity.
caf::error configure_file(sqlite_db& db, const sqlite_options& opts,
                          bool fresh);

/// Migrates the schema of a file of `version` to the current one (inside
/// the caller's transaction); nothing for a current file.
caf::error migrate_schema(sqlite_db& db, int64_t version);

/// Creates the schema in a fresh file (inside the caller's transaction).
caf::error create_schema(sqlite_db& db);

/// Checks the meta table of an existing file.
caf::error check_meta(sqlite_db& db);

/// Adds the index that pruning needs, if missing (an index only: the file
/// stays readable by older builds).
caf::error add_retention_index(sqlite_db& db);

/// The highest operation id ever stored: the highest row's, or the one
/// recorded before pruning deleted it.
caf::error read_last_operation_id(sqlite_db& db, uint64_t& out);

} // namespace pool::detail
