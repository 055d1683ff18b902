package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Tether on PostgreSQL: with -store postgres every stage starts -servers
// processes with TETHER_STORE=postgres on the database -postgres-url names,
// each stage in a fresh schema (TETHER_POSTGRES_SCHEMA), so that every
// scenario starts on an empty store as with a fresh Badger data dir; the
// clients spread over tenants as on etcd (cluster.go). The harness keeps a
// connection to drop each stage's schema after it (kept with -keep).

const storePostgres = "postgres"

// pgSchemaPrefix starts the name of every schema a run makes.
const pgSchemaPrefix = "tether_bench_"

// openPostgres connects the harness to -postgres-url and picks the run's
// schema prefix.
func (b *bench) openPostgres() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, b.cfg.postgresURL)
	if err != nil {
		return fmt.Errorf("error connecting to PostgreSQL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return fmt.Errorf("PostgreSQL at %s does not answer: %w", redactURL(b.cfg.postgresURL), err)
	}
	var raw [4]byte
	if _, err := rand.Read(raw[:]); err != nil {
		pool.Close()
		return err
	}
	b.pg = pool
	b.runPrefix = pgSchemaPrefix + hex.EncodeToString(raw[:]) + "_"
	return nil
}

func (b *bench) closePostgres() {
	if b.pg != nil {
		b.pg.Close()
	}
}

// stageSchema is a fresh schema name for a stage's servers (the servers
// create it).
func (b *bench) stageSchema(name string) string {
	b.stages++
	return fmt.Sprintf("%s%02d_%s", b.runPrefix, b.stages, name)
}

// dropSchema drops a finished stage's schema (kept with -keep).
func (b *bench) dropSchema(schema string) error {
	if b.pg == nil || schema == "" || b.cfg.keep {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := b.pg.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	if err != nil {
		return fmt.Errorf("error dropping the stage's schema %s: %w", schema, err)
	}
	return nil
}

// postgresEnv is the environment of a server of a stage in schema,
// listening on addr.
func (l *launcher) postgresEnv(schema, addr string) []string {
	return []string{
		"TETHER_STORE=postgres",
		"TETHER_POSTGRES_URL=" + l.cfg.postgresURL,
		"TETHER_POSTGRES_SCHEMA=" + schema,
		"TETHER_ADVERTISE_URL=http://" + addr,
	}
}

// redactURL is a PostgreSQL URL without its password, for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// describePostgres is the store line of the report with -store postgres.
func (c config) describePostgres() string {
	return fmt.Sprintf("postgres at %s (a fresh schema per stage), %d servers per stage, %d tenants (client i: tenant i mod %d, server i mod %d)",
		redactURL(c.postgresURL), c.servers, c.tenants, c.tenants, c.servers)
}

// storeNamespace is where a stage's servers keep their data besides the data
// dir: an etcd prefix or a PostgreSQL schema ("" with Badger).
func (b *bench) storeNamespace(name string) string {
	switch b.cfg.store {
	case storeEtcd:
		return b.stagePrefix(name)
	case storePostgres:
		return b.stageSchema(name)
	}
	return ""
}

// dropNamespace removes a finished stage's data from the shared store.
func (b *bench) dropNamespace(ns string) error {
	switch b.cfg.store {
	case storeEtcd:
		_, err := b.dropPrefix(ns)
		return err
	case storePostgres:
		return b.dropSchema(ns)
	}
	return nil
}

// storeEnv is the environment that puts a server's store in ns.
func (l *launcher) storeEnv(ns, addr string) []string {
	switch l.cfg.store {
	case storeEtcd:
		return l.etcdEnv(ns, addr)
	case storePostgres:
		return l.postgresEnv(ns, addr)
	}
	return nil
}

// isShared says whether the servers of a stage share one store (etcd or
// PostgreSQL) rather than each having a data dir.
func (c config) isShared() bool { return c.store == storeEtcd || c.store == storePostgres }
