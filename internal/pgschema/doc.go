// Package pgschema is Tether's schema in PostgreSQL: versioned migrations
// embedded in the binary (migrations/NNNN_name.sql, applied in order of
// NNNN) and the small runner that applies them.
//
// Why a runner of our own rather than golang-migrate or goose: both bring
// database/sql and a driver registry where the rest of Tether speaks pgx,
// and the runner we need is small: a table of applied versions, one
// transaction per migration, a lock so that servers starting together
// migrate once, and a check that refuses to start on a database that is
// behind.
//
// The schema's name is chosen by the operator (TETHER_POSTGRES_SCHEMA), so
// that several Tethers may share one database; the files write it as
// {{schema}}, and the runner substitutes a name it has validated as a plain
// identifier ([a-z_][a-z0-9_]{0,62}: nothing to quote, nothing to inject).
//
// Invariants:
//   - A migration is applied at most once: it runs in one transaction with
//     the row recording it in <schema>.schema_migrations, under a
//     transaction-scoped advisory lock (pg_advisory_xact_lock) taken before
//     that table is read, so two servers migrating at once apply it once
//     (the second finds it recorded). A failed migration leaves nothing.
//   - Migrations are applied in order, each exactly as embedded; a number
//     once released is never changed or reused (0002 is the intake table).
//   - Migrations only add (tables, columns, indexes): a schema ahead of a
//     binary serves it, so Check refuses only a schema behind, naming the
//     version found and the version wanted. Check never changes anything.
//
// What the SQL uses (kept to what CockroachDB and YugabyteDB also run):
// CREATE SCHEMA/TABLE/INDEX (a partial index), bytea, bigint, text,
// boolean, timestamptz, ON CONFLICT upserts, unnest of arrays, = ANY,
// SELECT ... FOR SHARE, REPEATABLE READ read-only transactions. The
// advisory lock serves the runner only; correctness of the store never
// rests on it, nor on LISTEN/NOTIFY.
package pgschema
