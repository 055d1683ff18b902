package pgschema

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var files embed.FS

// A Migration is one embedded file: its version (the number its name begins
// with) and its SQL, with {{schema}} for the schema's name.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// identifier is what a schema's name may be: a plain lower-case identifier,
// which PostgreSQL takes unquoted.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ValidSchema reports whether name may name a schema, and why not.
func ValidSchema(name string) error {
	if !identifier.MatchString(name) {
		return fmt.Errorf("schema name %q: must be a lower-case letter or _ followed by up to 62 lower-case letters, digits or _", name)
	}
	return nil
}

// migrationName is NNNN_words.sql.
var migrationName = regexp.MustCompile(`^([0-9]{4})_[a-z0-9_]+\.sql$`)

// Migrations are the embedded migrations in order of version.
func Migrations() []Migration {
	ms, err := load(files)
	if err != nil {
		panic(err) // the embedded files are checked by this package's tests
	}
	return ms
}

// load reads the migrations of fsys (migrations/*.sql) in order, refusing
// a name without a version and a version used twice or skipped.
func load(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		b, err := fs.ReadFile(fsys, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: version %d, want %d (versions run 1, 2, 3, ... without gaps)", m.Name, m.Version, i+1)
		}
	}
	return ms, nil
}

// Version is the version this binary's schema is at once migrated: that of
// its last migration.
func Version() int {
	ms := Migrations()
	return ms[len(ms)-1].Version
}

// lockKey is the advisory lock migrations take: one for every schema of
// every Tether, which costs nothing (migrations are rare and short).
const lockKey = 0x7465746865720001 // "tether" and 1

// Migrate applies to schema every migration it has not had, in order, each
// in a transaction of its own, and returns the versions it applied (none
// when the schema is up to date or another server migrated it meanwhile).
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) (applied []int, err error) {
	return migrate(ctx, pool, schema, Migrations())
}

func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, ms []Migration) (applied []int, err error) {
	if err := ValidSchema(schema); err != nil {
		return nil, err
	}
	for _, m := range ms {
		did, err := apply(ctx, pool, schema, m)
		if err != nil {
			return applied, fmt.Errorf("error applying migration %s to schema %s: %w", m.Name, schema, err)
		}
		if did {
			applied = append(applied, m.Version)
		}
	}
	return applied, nil
}

// apply applies m in one transaction unless schema has it, under the lock.
func apply(ctx context.Context, pool *pgxpool.Pool, schema string, m Migration) (bool, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockKey)); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+schema+".schema_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL)"); err != nil {
		return false, err
	}
	var has bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+schema+".schema_migrations WHERE version = $1)", m.Version).Scan(&has); err != nil {
		return false, err
	}
	if has {
		return false, nil
	}
	if _, err := tx.Exec(ctx, strings.ReplaceAll(m.SQL, "{{schema}}", schema)); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+schema+".schema_migrations (version, applied_at) VALUES ($1, $2)", m.Version, time.Now().UTC()); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

// Current is the version schema is at: the highest migration it has had (0
// for a schema never migrated). It changes nothing.
func Current(ctx context.Context, pool *pgxpool.Pool, schema string) (int, error) {
	if err := ValidSchema(schema); err != nil {
		return 0, err
	}
	var v int
	err := pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+schema+".schema_migrations").Scan(&v)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") { // undefined table, undefined schema
		return 0, nil
	}
	return v, err
}

// ErrBehind is the error Check returns for a schema behind this binary.
type ErrBehind struct {
	Schema        string
	Current, Want int
}

func (e *ErrBehind) Error() string {
	return fmt.Sprintf("PostgreSQL schema %s is at version %d, this server needs version %d: run `tether migrate`", e.Schema, e.Current, e.Want)
}

// Check returns nil when schema has every migration of this binary, and an
// *ErrBehind naming the version found and the version wanted when it is
// behind: a server refuses to start on it. A schema ahead (a newer server
// migrated it) is accepted: migrations only add, so that the servers of a
// rolling upgrade run side by side. It changes nothing.
func Check(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	cur, err := Current(ctx, pool, schema)
	if err != nil {
		return fmt.Errorf("error reading the version of PostgreSQL schema %s: %w", schema, err)
	}
	if want := Version(); cur < want {
		return &ErrBehind{Schema: schema, Current: cur, Want: want}
	}
	return nil
}
