#pragma once

// Private to pg_schema.cpp: the PostgreSQL store's schema migrations.

namespace pool::detail {

// The migrations: `migrations[i]` makes version i + 1 of version i. `{s}`
// stands for the schema. Times are nanoseconds of the server's clock since
// the Unix epoch; `state` holds `operation_state` values.
inline constexpr const char* pg_migrations[] = {
    // 1: the queue, outcomes and histories.
    R"sql(
CREATE TABLE {s}.meta (
  name text PRIMARY KEY,
  value text NOT NULL
);
CREATE SEQUENCE {s}.id_blocks;
CREATE SEQUENCE {s}.entry_seq;
CREATE TABLE {s}.operations (
  id bigint PRIMARY KEY,
  queue text NOT NULL,
  state smallint NOT NULL,
  attempt integer NOT NULL,
  due bigint NOT NULL,
  seq bigint NOT NULL DEFAULT nextval('{s}.entry_seq'),
  payload bytea NOT NULL,
  result bytea,
  error bytea,
  key text,
  submitted bigint NOT NULL,
  finished bigint
);
CREATE INDEX operations_due ON {s}.operations (queue, due, seq)
  WHERE state = 0;
CREATE UNIQUE INDEX operations_key ON {s}.operations (queue, key)
  WHERE key IS NOT NULL AND state <= 1;
CREATE INDEX operations_key_finished ON {s}.operations (queue, key, finished)
  WHERE key IS NOT NULL AND state IN (2, 3);
CREATE TABLE {s}.failures (
  operation bigint NOT NULL REFERENCES {s}.operations (id)
    ON DELETE CASCADE,
  n bigint GENERATED ALWAYS AS IDENTITY,
  attempt integer NOT NULL,
  after_submit bigint NOT NULL,
  reason bytea NOT NULL
);
CREATE INDEX failures_operation ON {s}.failures (operation, n);
INSERT INTO {s}.meta (name, value)
  VALUES ('application', 'caf-pool'), ('schema_version', '1');
)sql",
    // 2: leases (shared queues) and retention.
    R"sql(
ALTER TABLE {s}.operations
  ADD COLUMN owner text,
  ADD COLUMN lease_until bigint,
  ADD COLUMN lease_token bigint NOT NULL DEFAULT 0;
CREATE INDEX operations_leases ON {s}.operations (queue, lease_until)
  WHERE state = 1;
CREATE INDEX operations_finished ON {s}.operations (queue, finished)
  WHERE state >= 2;
UPDATE {s}.meta SET value = '2' WHERE name = 'schema_version';
)sql",
    // 3: options per submit (job_options): the priority and concurrency key
    // of each entry, claimed higher priority first; the options themselves
    // for lookups and for the shepherd that runs the entry.
    R"sql(
ALTER TABLE {s}.operations
  ADD COLUMN priority integer NOT NULL DEFAULT 0,
  ADD COLUMN ckey text,
  ADD COLUMN options bytea;
DROP INDEX {s}.operations_due;
CREATE INDEX operations_due ON {s}.operations (queue, priority DESC, due, seq)
  WHERE state = 0;
UPDATE {s}.meta SET value = '3' WHERE name = 'schema_version';
)sql",
    // 4: attempts are spent only by running. A claimed entry's place in
    // its store's hand-out order (claim number << 20 | position); how far
    // each store handed out its claims (`owners`, written with its
    // groups): an entry beyond that never started.
    R"sql(
ALTER TABLE {s}.operations ADD COLUMN handout bigint;
CREATE TABLE {s}.owners (
  owner text PRIMARY KEY,
  handed bigint NOT NULL
);
UPDATE {s}.meta SET value = '4' WHERE name = 'schema_version';
)sql",
    // 5: when each concurrency key was last claimed by a claim that keeps
    // per-key limits (`claim_keyed`): keys take turns across claims.
    R"sql(
CREATE TABLE {s}.key_turns (
  queue text NOT NULL,
  ckey text NOT NULL,
  served bigint NOT NULL,
  PRIMARY KEY (queue, ckey)
);
UPDATE {s}.meta SET value = '5' WHERE name = 'schema_version';
)sql",
    // 6: per-key start rates across stores. A claim that keeps them writes
    // the key's period into the entries it takes (`rated_per`); when such
    // an entry leaves its lease having run (done, failed, cancelled, back
    // for another attempt, taken back from a store that is gone after it
    // started), its token stays spent until one period after that
    // (`key_spent`), so no period sees more starts than the rate, wherever
    // they ran. An entry that goes back unstarted (same attempt) spends
    // nothing. Other entries never reach the trigger's function.
    R"sql(
ALTER TABLE {s}.operations ADD COLUMN rated_per bigint;
CREATE TABLE {s}.key_spent (
  queue text NOT NULL,
  ckey text NOT NULL,
  until bigint NOT NULL
);
CREATE INDEX key_spent_until ON {s}.key_spent (queue, until);
CREATE FUNCTION {s}.key_spent_on_release() RETURNS trigger
  LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO {s}.key_spent (queue, ckey, until) VALUES (OLD.queue,
    OLD.ckey, (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint
    + OLD.rated_per);
  RETURN NULL;
END $f$;
CREATE TRIGGER operations_key_spent AFTER UPDATE OF state ON {s}.operations
  FOR EACH ROW WHEN (OLD.state = 1 AND NEW.state <> 1
    AND OLD.rated_per IS NOT NULL AND OLD.ckey IS NOT NULL
    AND (NEW.state <> 0 OR NEW.attempt <> OLD.attempt))
  EXECUTE FUNCTION {s}.key_spent_on_release();
UPDATE {s}.meta SET value = '6' WHERE name = 'schema_version';
)sql",
    // 7: the dead set's reads (a restarted pool's `select_failed`, the jobs
    // view's failed and cancelled operations, an operator's retry or
    // discard) through an index of their own: `operations_finished` holds
    // every success kept as well, which they stepped over.
    R"sql(
CREATE INDEX operations_ended ON {s}.operations (queue, finished)
  WHERE state IN (3, 4);
UPDATE {s}.meta SET value = '7' WHERE name = 'schema_version';
)sql",
};

} // namespace pool::detail
