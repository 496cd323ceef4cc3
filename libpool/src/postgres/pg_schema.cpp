#include "pg_schema.hpp"

#include <array>
#include <iterator>

#include <fmt/format.h>

#include "pg_migrations.hpp"
#include "pool/errors.hpp"
#include "pool/pg_store.hpp"

namespace pool::detail {

namespace {

// The migrations (pg_migrations.hpp): `migrations[i]` makes version i + 1
// of version i.
constexpr auto& migrations = pg_migrations;

static_assert(std::size(migrations) == pg_store::schema_version);

// Indexed by `pg_sql`.
constexpr const char* statement_sql[] = {
    // push: $1 id, $2 queue, $3 attempt, $4 due (NULL: now by the server's
    // clock, so that every store sees it due at once), $5 payload, $6 key,
    // $7 submitted, $8 owner, $9 token (NULL unless a held retry),
    // $10 priority, $11 concurrency key, $12 options (NULL: as before).
    "INSERT INTO {s}.operations AS o (id, queue, state, attempt, due, "
    "payload, key, submitted, priority, ckey, options) VALUES ($1, $2, 0, "
    "$3, coalesce($4::bigint, {now}), $5, $6, $7, $10, $11, $12) "
    "ON CONFLICT (id) DO UPDATE SET state = 0, attempt = excluded.attempt, "
    "due = excluded.due, seq = nextval('{s}.entry_seq'), "
    "payload = excluded.payload, key = coalesce(excluded.key, o.key), "
    "priority = excluded.priority, ckey = excluded.ckey, "
    "options = coalesce(excluded.options, o.options), "
    "result = NULL, error = NULL, finished = NULL, owner = NULL, "
    "lease_until = NULL, handout = NULL WHERE o.state = 0 OR (o.state = 1 AND "
    "o.owner = $8::text AND o.lease_token = $9::bigint) RETURNING o.id",
    // claim: $1 queue, $2 now, $3 limit, $4 owner, $5 lease until, $6 the
    // claim's hand-out base. Higher priority first, then by due time (the
    // index's order); each entry's hand-out place in that order.
    "WITH picked AS (SELECT id, priority AS level, due, seq FROM "
    "{s}.operations WHERE queue = $1 AND state = 0 AND due <= greatest($2, "
    "{now}) ORDER BY priority DESC, due, seq LIMIT $3 FOR UPDATE SKIP "
    "LOCKED), placed AS (SELECT id, level, row_number() OVER (ORDER BY "
    "level DESC, due, seq) AS place FROM picked) UPDATE {s}.operations o SET "
    "state = 1, owner = $4, lease_until = $5, handout = $6::bigint + "
    "placed.place, lease_token = o.lease_token + 1 FROM placed WHERE o.id = "
    "placed.id RETURNING o.id, o.attempt, o.payload, o.lease_token, "
    "o.handout, placed.level, o.priority, o.ckey, o.options",
    // claim_aged: as claim, $7 the aging step in nanoseconds: an entry
    // gains one level per step it has been due (sorts every due entry).
    "WITH t AS (SELECT greatest($2, {now}) AS now), picked AS (SELECT id, "
    "priority + (t.now - due) / $7::bigint AS level, due, seq FROM "
    "{s}.operations, t WHERE queue = $1 AND state = 0 AND due <= t.now "
    "ORDER BY level DESC, due, seq LIMIT $3 FOR UPDATE OF operations SKIP "
    "LOCKED), placed AS (SELECT id, level, row_number() OVER (ORDER BY "
    "level DESC, due, seq) AS place FROM picked) UPDATE {s}.operations o SET "
    "state = 1, owner = $4, lease_until = $5, handout = $6::bigint + "
    "placed.place, lease_token = o.lease_token + 1 FROM placed WHERE o.id = "
    "placed.id RETURNING o.id, o.attempt, o.payload, o.lease_token, "
    "o.handout, placed.level, o.priority, o.ckey, o.options",
    // claim_keyed: as claim, $7 the aging step in ns (NULL: none), $8 the
    // concurrency limit of every key (NULL: none), $9 keys with limits of
    // their own (text[]), $10 their concurrency limits (int4[], 0: none),
    // $11 / $12 the start rate of every key (starts, period in ns; NULL:
    // none), $13 / $14 the rates of the keys in $9 (int8[], 0: none).
    // Under the queue's lock: a key's claimed and running entries count
    // against its limit and its rate, and so do its entries released less
    // than a period ago (`key_spent`, written by a trigger for the entries
    // claimed with the key's period in `rated_per`); keys take turns (each
    // key's first, then second, ...; within a turn the least lately
    // claimed first: `key_turns`), higher level first within a key. Reads
    // every due entry (docs/postgres.md).
    "WITH t AS (SELECT greatest($2, {now}) AS now), held AS (SELECT ckey, "
    "count(*) AS n FROM {s}.operations WHERE queue = $1 AND state = 1 AND "
    "ckey IS NOT NULL GROUP BY ckey), spent AS (SELECT ckey, count(*) AS n "
    "FROM {s}.key_spent, t WHERE queue = $1 AND until > t.now GROUP BY "
    "ckey), own AS (SELECT k, nullif(n, 0) AS n, nullif(rs, 0) AS rs, "
    "nullif(rp, 0) AS rp FROM unnest($9::text[], $10::int4[], $13::int8[], "
    "$14::int8[]) AS l(k, n, rs, rp)), due AS (SELECT id, priority + CASE "
    "WHEN $7::bigint IS NULL THEN 0 ELSE (t.now - due) / $7::bigint END AS "
    "level, due, seq, ckey FROM {s}.operations, t WHERE queue = $1 AND "
    "state = 0 AND due <= t.now), turns AS (SELECT d.id, d.level, d.due, "
    "d.seq, d.ckey, coalesce(k.served, 0) AS served, CASE WHEN d.ckey IS "
    "NULL THEN 1 ELSE row_number() OVER (PARTITION BY d.ckey ORDER BY "
    "d.level DESC, d.due, d.seq) END AS turn FROM due d LEFT JOIN "
    "{s}.key_turns k ON k.queue = $1 AND k.ckey = d.ckey), picked AS "
    "(SELECT d.id, d.level, d.due, d.seq, d.turn, d.served, CASE WHEN "
    "d.ckey IS NULL THEN NULL WHEN o.k IS NULL THEN $12::bigint ELSE o.rp "
    "END AS per FROM turns d LEFT "
    "JOIN held h ON h.ckey = d.ckey LEFT JOIN spent x ON x.ckey = d.ckey "
    "LEFT JOIN own o ON o.k = d.ckey WHERE d.ckey IS NULL OR (d.turn + "
    "coalesce(h.n, 0) <= coalesce(o.n, CASE WHEN o.k IS NULL THEN "
    "$8::bigint END, 9223372036854775807) AND d.turn + coalesce(h.n, 0) + "
    "coalesce(x.n, 0) <= coalesce(o.rs, CASE WHEN o.k IS NULL THEN "
    "$11::bigint END, 9223372036854775807)) ORDER BY d.turn, d.served, "
    "d.level DESC, d.due, d.seq LIMIT $3), placed AS (SELECT id, level, "
    "per, row_number() OVER (ORDER BY turn, served, level DESC, due, seq) "
    "AS place FROM picked), claimed AS (UPDATE {s}.operations o SET state "
    "= 1, owner = $4, lease_until = $5, handout = $6::bigint + "
    "placed.place, lease_token = o.lease_token + 1, rated_per = placed.per "
    "FROM placed WHERE o.id = placed.id AND o.state = 0 RETURNING o.id, "
    "o.attempt, o.payload, o.lease_token, o.handout, placed.level, "
    "o.priority, o.ckey, o.options), served AS (INSERT INTO {s}.key_turns "
    "(queue, ckey, served) SELECT $1, ckey, (SELECT now FROM t) FROM "
    "claimed WHERE ckey IS NOT NULL GROUP BY ckey ON CONFLICT (queue, "
    "ckey) DO UPDATE SET served = excluded.served), expired AS (DELETE "
    "FROM {s}.key_spent WHERE queue = $1 AND until <= (SELECT now FROM t)) "
    "SELECT * FROM claimed",
    // key_token_back: $1 queue, $2 now. When the next start token of a
    // rate-limited key comes back (NULL: none is out).
    "SELECT min(until) FROM {s}.key_spent WHERE queue = $1 AND until > "
    "greatest($2, {now})",
    // count_leases: $1 queue, $2 now.
    "SELECT count(*) FROM {s}.operations WHERE queue = $1 AND state = 1 AND "
    "lease_until >= $2",
    // lock / try_lock: $1 name (until the end of the transaction).
    "SELECT pg_advisory_xact_lock(1128351312, hashtext($1))",
    "SELECT pg_try_advisory_xact_lock(1128351312, hashtext($1))",
    // finish_held: $1 id, $2 state, $3 result, $4 error, $5 finished,
    // $6 owner, $7 token.
    "UPDATE {s}.operations SET state = $2, result = $3, error = $4, "
    "finished = $5, owner = NULL, lease_until = NULL WHERE id = $1 AND "
    "state = 1 AND owner = $6 AND lease_token = $7",
    // finish_queued: $1 .. $5 as above.
    "UPDATE {s}.operations SET state = $2, result = $3, error = $4, "
    "finished = $5 WHERE id = $1 AND state = 0",
    // add_failure: $1 operation, $2 attempt, $3 after submit, $4 reason.
    "INSERT INTO {s}.failures (operation, attempt, after_submit, reason) "
    "VALUES ($1, $2, $3, $4)",
    // add_failure_held: as above, $5 owner, $6 token.
    "INSERT INTO {s}.failures (operation, attempt, after_submit, reason) "
    "SELECT $1::bigint, $2::integer, $3::bigint, $4::bytea WHERE EXISTS "
    "(SELECT 1 FROM {s}.operations WHERE id = $1 AND state = 1 AND "
    "owner = $5 AND lease_token = $6)",
    // cancel_queued: $1 id, $2 finished.
    "UPDATE {s}.operations SET state = 4, finished = $2 WHERE id = $1 AND "
    "state = 0",
    // cancel_held: $1 id, $2 finished, $3 owner, $4 token.
    "UPDATE {s}.operations SET state = 4, finished = $2, owner = NULL, "
    "lease_until = NULL WHERE id = $1 AND state = 1 AND owner = $3 AND "
    "lease_token = $4",
    // find_key: $1 queue, $2 key, $3 finished since.
    "SELECT id FROM {s}.operations WHERE queue = $1 AND key = $2 AND "
    "(state <= 1 OR (state IN (2, 3) AND finished >= $3)) "
    "ORDER BY state <= 1 DESC, id DESC LIMIT 1",
    // key_owner: $1 queue, $2 key.
    "SELECT id FROM {s}.operations WHERE queue = $1 AND key = $2 AND "
    "state <= 1",
    // select_operation: $1 id. Whether it has a history of failures too:
    // most operations have none, and their lookup is one statement.
    "SELECT state, attempt, payload, result, error, key, options, EXISTS "
    "(SELECT 1 FROM {s}.failures f WHERE f.operation = $1) FROM "
    "{s}.operations WHERE id = $1",
    // select_history: $1 operation.
    "SELECT attempt, after_submit, reason FROM {s}.failures WHERE "
    "operation = $1 ORDER BY n",
    // absent_owners: $1 queue, $2 the owners' lock space, $3 this store's
    // owner. The owners holding leases of the queue whose session lock
    // (`pg_try_advisory_lock_shared(space, id block)`, taken by each of
    // their connections) no session holds: their process is gone, or cut
    // off from the server.
    "WITH alive AS MATERIALIZED (SELECT objid::bigint AS block FROM pg_locks "
    "WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database "
    "WHERE datname = current_database()) AND classid = ($2::bigint & "
    "4294967295)::oid AND objsubid = 2 AND granted) SELECT DISTINCT owner "
    "FROM {s}.operations WHERE queue = $1 AND state = 1 AND owner <> $3 AND "
    "substring(owner FROM ':([0-9]+)$')::bigint NOT IN (SELECT block FROM "
    "alive)",
    // reclaim: $1 queue, $2 now, $3 limit, $4 owners gone (text[]). Leases
    // that expired, or whose owner is gone. An attempt that had started
    // (handed out as far as its owner's `owners` row says; one claimed by
    // an older build counts as started) is a failed one: due now, attempt
    // + 1. One that had not goes back as it was, in its place.
    "WITH taken AS (SELECT o.id, o.attempt, o.owner, o.submitted, "
    "coalesce(o.handout <= coalesce(w.handed, 0), true) AS started FROM "
    "{s}.operations o LEFT JOIN {s}.owners w ON w.owner = o.owner WHERE "
    "o.queue = $1 AND o.state = 1 AND (o.lease_until < $2 OR o.owner = "
    "ANY($4::text[])) ORDER BY o.lease_until LIMIT $3 FOR UPDATE OF o SKIP "
    "LOCKED), moved AS (UPDATE {s}.operations o SET state = 0, "
    "attempt = o.attempt + t.started::integer, handout = NULL, "
    "due = CASE WHEN t.started THEN $2 ELSE o.due END, "
    "seq = CASE WHEN t.started THEN nextval('{s}.entry_seq') ELSE o.seq "
    "END, owner = NULL, lease_until = NULL, lease_token = o.lease_token + 1 "
    "FROM taken t WHERE o.id = t.id RETURNING o.id) SELECT t.id, "
    "t.attempt, t.owner, t.started, t.submitted, t.owner = ANY($4::text[]) "
    "FROM taken t JOIN moved m ON m.id = t.id",
    // release: $1 owner. Every attempt the store holds goes back unstarted
    // (the store closes): same attempt, same place in the queue.
    "WITH gone AS (DELETE FROM {s}.owners WHERE owner = $1) UPDATE "
    "{s}.operations SET state = 0, owner = NULL, lease_until = NULL, "
    "handout = NULL, lease_token = lease_token + 1 WHERE owner = $1 AND "
    "state = 1",
    // release_held: $1 id, $2 owner, $3 token. One attempt goes back
    // unstarted (its pool stopped it).
    "UPDATE {s}.operations SET state = 0, owner = NULL, lease_until = NULL, "
    "handout = NULL, lease_token = lease_token + 1 WHERE id = $1 AND "
    "state = 1 AND owner = $2 AND lease_token = $3",
    // owner_lock: $1 lock space, $2 id block. Held by each connection of a
    // store while it lives (absent_owners).
    "SELECT pg_try_advisory_lock_shared($1::integer, $2::integer)",
    // handed: $1 owner, $2 the hand-out place of the last entry handed out
    // to run (claim.cpp).
    "INSERT INTO {s}.owners AS w (owner, handed) VALUES ($1, $2) ON "
    "CONFLICT (owner) DO UPDATE SET handed = greatest(w.handed, "
    "excluded.handed)",
    // forget_owners: $1 owners gone (text[]) that hold no lease any more.
    "DELETE FROM {s}.owners w WHERE w.owner = ANY($1::text[]) AND NOT "
    "EXISTS (SELECT 1 FROM {s}.operations o WHERE o.owner = w.owner AND "
    "o.state = 1)",
    // counts: $1 queue, $2 now.
    "WITH t AS (SELECT greatest($2, {now}) AS now) SELECT count(*) FILTER "
    "(WHERE due <= t.now), count(*) FILTER (WHERE due > t.now), min(due) "
    "FILTER (WHERE due > t.now) FROM {s}.operations, t WHERE queue = $1 "
    "AND state = 0",
    // prune: $1 queue, $2 finished before, $3 limit.
    "DELETE FROM {s}.operations WHERE id IN (SELECT id FROM {s}.operations "
    "WHERE queue = $1 AND state >= 2 AND finished < $2 ORDER BY finished "
    "LIMIT $3)",
    // notify: $1 channel, $2 payloads (an array: one round trip).
    "SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) AS p",
    // next_block.
    "SELECT nextval('{s}.id_blocks')",
    // server_time.
    "SELECT {now}",
    // select_failed: $1 queue, $2 finished since, $3 limit. The dead set of
    // a restarted pool, newest failures first.
    "SELECT id, payload, key, options, error, finished FROM {s}.operations "
    "WHERE queue = $1 AND state = 3 AND finished >= $2 ORDER BY finished "
    "DESC, id DESC LIMIT $3",
    // select_failed_history: as select_failed; their attempt histories.
    "SELECT f.operation, f.attempt, f.after_submit, f.reason FROM "
    "{s}.failures f JOIN (SELECT id FROM {s}.operations WHERE queue = $1 AND "
    "state = 3 AND finished >= $2 ORDER BY finished DESC, id DESC LIMIT $3) "
    "o ON o.id = f.operation ORDER BY f.operation, f.n",
    // forget_failed: $1 id (its failures go with it: ON DELETE CASCADE).
    "DELETE FROM {s}.operations WHERE id = $1 AND state = 3",
};

static_assert(std::size(statement_sql) == static_cast<size_t>(pg_sql::count));

// Indexed by `pg_batch_sql`: not prepared.
constexpr const char* batch_sql[] = {
    // push_many (pg_batch.cpp): new operations without key, in order. $1
    // ids, $2 attempts, $3 dues (NULL: now), $4 payloads, $5 submitted
    // (arrays), $6 queue, $7 priorities, $8 concurrency keys, $9 options
    // (arrays).
    "INSERT INTO {s}.operations AS o (id, queue, state, attempt, due, "
    "payload, submitted, priority, ckey, options) SELECT u.id, $6, 0, "
    "u.attempt, coalesce(u.due, {now}), u.payload, u.submitted, u.priority, "
    "u.ckey, u.options FROM unnest($1::bigint[], $2::integer[], "
    "$3::bigint[], $4::bytea[], $5::bigint[], $7::integer[], $8::text[], "
    "$9::bytea[]) WITH ORDINALITY AS u(id, attempt, due, payload, "
    "submitted, priority, ckey, options, n) ORDER BY u.n "
    "ON CONFLICT (id) DO UPDATE SET state = 0, attempt = excluded.attempt, "
    "due = excluded.due, seq = nextval('{s}.entry_seq'), "
    "payload = excluded.payload, priority = excluded.priority, "
    "ckey = excluded.ckey, options = coalesce(excluded.options, o.options), "
    "result = NULL, error = NULL, "
    "finished = NULL, owner = NULL, lease_until = NULL WHERE o.state = 0 "
    "RETURNING o.id",
    // finish_many (pg_batch.cpp): outcomes of held attempts. $1 ids,
    // $2 states, $3 results, $4 errors, $5 finished, $6 tokens (arrays),
    // $7 owner. The lease check is one join condition (`IS TRUE`): given
    // conditions on the table alone, a planner whose statistics lag behind
    // a busy queue scans every lease and, for each, the whole array
    // (milliseconds per batch); this way it looks each id up by primary
    // key, or at worst hashes the array, and `o.id = ANY($1)` keeps the
    // primary key's index on the table's side of such a hash join
    // (without it, auto_explain showed a whole scan of a 4,882-row table
    // per 128-row batch, 2.6 ms: bench/run_pg_peers).
    "UPDATE {s}.operations o SET state = u.state, result = u.result, "
    "error = u.error, finished = u.finished, owner = NULL, "
    "lease_until = NULL FROM unnest($1::bigint[], $2::integer[], "
    "$3::bytea[], $4::bytea[], $5::bigint[], $6::bigint[]) AS u(id, state, "
    "result, error, finished, token) WHERE o.id = u.id AND o.id = "
    "ANY($1::bigint[]) AND (o.state = 1 AND o.owner = $7 AND "
    "o.lease_token = u.token) IS TRUE RETURNING o.id",
    // renew_held: the leases this store holds. $1 ids, $2 tokens (arrays),
    // $3 owner, $4 lease until.
    "UPDATE {s}.operations o SET lease_until = $4 FROM unnest($1::bigint[], "
    "$2::bigint[]) AS u(id, token) WHERE o.id = u.id AND o.id = "
    "ANY($1::bigint[]) AND (o.state = 1 AND o.owner = $3 AND "
    "o.lease_token = u.token) IS TRUE RETURNING o.id",
    // renew_owned: every lease of owner $1, to at least now + $2 ns (a
    // store's listener, when it reconnects after an outage).
    "UPDATE {s}.operations SET lease_until = greatest(lease_until, {now} + "
    "$2::bigint) WHERE owner = $1 AND state = 1",
};

// The server's clock in nanoseconds since the Unix epoch.
constexpr const char* server_now =
    "(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint";

// `text` with every `from` replaced by `to`.
void replace_all(std::string& text, const std::string& from,
                 const std::string& to) {
  for (auto i = text.find(from); i != std::string::npos;
       i = text.find(from, i + to.size()))
    text.replace(i, from.size(), to);
}

// `text` with every `{s}` replaced by the quoted schema name and every
// `{now}` by the server's clock.
std::string with_schema(const char* text, const std::string& schema) {
  std::string result = text;
  replace_all(result, "{s}", "\"" + schema + "\"");
  replace_all(result, "{now}", server_now);
  return result;
}

// Reads the version of an existing schema; 0 when it is empty (created for
// the pool by an administrator).
caf::error read_version(pg_conn& db, const std::string& schema, int& version) {
  auto what = std::string{"inspecting schema "} + schema;
  auto found = db.query("SELECT (SELECT count(*) FROM pg_class c JOIN "
                        "pg_namespace n ON n.oid = c.relnamespace WHERE "
                        "n.nspname = $1), to_regclass($2) IS NOT NULL",
                        {schema, "\"" + schema + "\".meta"}, what);
  if (!found)
    return std::move(found.error());
  auto objects = pg_int(found->get(), 0, 0);
  auto has_meta = pg_int(found->get(), 0, 1) != 0;
  if (!has_meta) {
    if (objects == 0) {
      version = 0;
      return caf::none;
    }
    return caf::make_error(
        pool_errc::store_incompatible, db.target(),
        fmt::format("schema \"{}\" holds {} objects of another program (no "
                    "pool meta table); name another schema for the pool "
                    "(pg_options::schema)",
                    schema, objects));
  }
  auto meta = db.query(with_schema("SELECT (SELECT value FROM {s}.meta WHERE "
                                   "name = 'application'), (SELECT value FROM "
                                   "{s}.meta WHERE name = 'schema_version')",
                                   schema),
                       {}, what);
  if (!meta)
    return std::move(meta.error());
  auto app = pg_text(meta->get(), 0, 0);
  auto text = pg_text(meta->get(), 0, 1);
  if (app != pg_store::application)
    return caf::make_error(
        pool_errc::store_incompatible, db.target(),
        fmt::format("schema \"{}\" belongs to application '{}', not '{}'; "
                    "name another schema for the pool (pg_options::schema)",
                    schema, app, pg_store::application));
  try {
    version = std::stoi(text);
  } catch (...) {
    version = -1;
  }
  if (version < 1)
    return caf::make_error(pool_errc::store_incompatible, db.target(),
                           fmt::format("schema \"{}\" has no valid schema "
                                       "version ('{}')",
                                       schema, text));
  return caf::none;
}

caf::error migrate_locked(pg_conn& db, const std::string& schema, int upto) {
  auto lock = db.query("SELECT pg_advisory_xact_lock($1, hashtext($2))",
                       {int64_t{pg_lock_space}, schema + "/schema"},
                       "locking the schema");
  if (!lock)
    return std::move(lock.error());
  auto exists = db.query("SELECT count(*) FROM pg_namespace WHERE "
                         "nspname = $1",
                         {schema}, "looking for schema " + schema);
  if (!exists)
    return std::move(exists.error());
  int version = 0;
  if (pg_int(exists->get(), 0, 0) == 0) {
    auto create = with_schema("CREATE SCHEMA {s}", schema);
    if (auto err = db.exec(create.c_str(), "creating schema " + schema))
      return caf::make_error(pool_errc::store_failed, db.target(),
                             detail_of(err) +
                                 "; grant the user CREATE on the database, "
                                 "or create the schema for it");
  } else if (auto err = read_version(db, schema, version)) {
    return err;
  }
  if (version > upto)
    return caf::make_error(
        pool_errc::store_incompatible, db.target(),
        fmt::format("schema \"{}\" has version {}; this build knows versions "
                    "up to {} only: use a newer build",
                    schema, version, upto));
  for (auto v = version; v < upto; ++v) {
    auto text = with_schema(migrations[v], schema);
    if (auto err = db.exec(text.c_str(),
                           fmt::format("migrating schema \"{}\" to version {}",
                                       schema, v + 1)))
      return err;
  }
  return caf::none;
}

} // namespace

int32_t pg_owner_lock_space(const std::string& schema) {
  uint32_t h = 2166136261u; // FNV-1a, 32 bit
  for (auto c : "owner/" + schema) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  auto result = static_cast<int32_t>(h);
  return result != pg_lock_space ? result : result + 1;
}

const std::string& pg_statement_name(pg_sql s) {
  static const auto names = [] {
    std::array<std::string, static_cast<size_t>(pg_sql::count)> result;
    for (size_t i = 0; i < result.size(); ++i)
      result[i] = "caf_pool_" + std::to_string(i);
    return result;
  }();
  return names[static_cast<size_t>(s)];
}

caf::error pg_migrate(pg_conn& db, const std::string& schema, int upto) {
  if (upto < 1 || upto > static_cast<int>(std::size(migrations)))
    return caf::make_error(pool_errc::invalid_option, std::string{"upto"},
                           std::string{"no such schema version"});
  if (auto err = db.exec("BEGIN", "starting a transaction"))
    return err;
  auto err = migrate_locked(db, schema, upto);
  if (!err)
    err = db.exec("COMMIT", "committing the schema");
  if (err && db.in_transaction())
    // Failing to roll back changes nothing: the store does not open and
    // closing the connection rolls back as well.
    static_cast<void>(db.exec("ROLLBACK", "rolling back"));
  return err;
}

std::string pg_statement_text(const char* text, const std::string& schema) {
  return with_schema(text, schema);
}

std::string pg_batch_statement(pg_batch_sql s, const std::string& schema) {
  return with_schema(batch_sql[static_cast<size_t>(s)], schema);
}

caf::error pg_prepare(pg_conn& db, const std::string& schema) {
  for (size_t i = 0; i < static_cast<size_t>(pg_sql::count); ++i)
    if (auto err = db.prepare(pg_statement_name(static_cast<pg_sql>(i)),
                              with_schema(statement_sql[i], schema)))
      return err;
  return caf::none;
}

} // namespace pool::detail
