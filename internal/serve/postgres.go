package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tether-run/tether/internal/cluster"
	"github.com/tether-run/tether/internal/envflag"
	"github.com/tether-run/tether/internal/pgschema"
)

// What a server does at start with a schema behind its binary
// (TETHER_POSTGRES_MIGRATE).
const (
	migrateAuto   = "auto"   // apply the missing migrations
	migrateRefuse = "refuse" // refuse to start, naming the versions
)

// Bounds of TETHER_POSTGRES_POOL_SIZE.
const (
	defaultPoolSize = 16
	maxPoolSize     = 1000
)

// postgresSettings are the TETHER_POSTGRES_* settings of
// TETHER_STORE=postgres. The shard count and the session's TTL have
// settings of their own rather than TETHER_ETCD_SHARDS and
// TETHER_ETCD_LEASE_TTL_MS: each store reads only its own prefix, so a
// setting never means two things.
type postgresSettings struct {
	URL       string
	PoolSize  int
	Schema    string
	Migrate   string
	Shards    int
	LeaseTTL  time.Duration
	Advertise string
	BlobDir   string
}

// loadPostgresEnv reads the settings of TETHER_STORE=postgres.
func loadPostgresEnv(s *settings, f storeFlags) error {
	p := postgresSettings{
		URL:     os.Getenv("TETHER_POSTGRES_URL"),
		Schema:  envflag.String("TETHER_POSTGRES_SCHEMA", cluster.DefaultSchema),
		Migrate: strings.ToLower(envflag.String("TETHER_POSTGRES_MIGRATE", migrateAuto)),
	}
	pool, err := envflag.Int("TETHER_POSTGRES_POOL_SIZE", defaultPoolSize)
	if err != nil {
		return err
	}
	shards, err := envflag.Int("TETHER_POSTGRES_SHARDS", cluster.DefaultShards)
	if err != nil {
		return err
	}
	ttlMS, err := envflag.Int("TETHER_POSTGRES_LEASE_TTL_MS", cluster.DefaultLeaseTTL.Milliseconds())
	if err != nil {
		return err
	}
	switch {
	case p.URL == "":
		return errors.New("TETHER_STORE=postgres needs TETHER_POSTGRES_URL (postgres://user:password@host:port/database?sslmode=verify-full)")
	case pool < 2 || pool > maxPoolSize:
		return fmt.Errorf("TETHER_POSTGRES_POOL_SIZE must be from 2 to %d, not %d", maxPoolSize, pool)
	case p.Migrate != migrateAuto && p.Migrate != migrateRefuse:
		return fmt.Errorf("TETHER_POSTGRES_MIGRATE must be %s or %s, not %q", migrateAuto, migrateRefuse, p.Migrate)
	case shards < 1 || shards > cluster.MaxShards:
		return fmt.Errorf("TETHER_POSTGRES_SHARDS must be from 1 to %d, not %d", cluster.MaxShards, shards)
	case ttlMS < cluster.MinLeaseTTL.Milliseconds() || ttlMS > cluster.MaxLeaseTTL.Milliseconds():
		return fmt.Errorf("TETHER_POSTGRES_LEASE_TTL_MS must be from %d to %d, not %d", cluster.MinLeaseTTL.Milliseconds(), cluster.MaxLeaseTTL.Milliseconds(), ttlMS)
	}
	if err := pgschema.ValidSchema(p.Schema); err != nil {
		return fmt.Errorf("TETHER_POSTGRES_SCHEMA: %w", err)
	}
	if _, err := pgxpool.ParseConfig(p.URL); err != nil {
		// pgx's message may quote the URL, password and all.
		return errors.New("TETHER_POSTGRES_URL is not a PostgreSQL URL or connection string pgx can read (postgres://user:password@host:port/database?sslmode=...)")
	}
	p.PoolSize, p.Shards, p.LeaseTTL = int(pool), int(shards), time.Duration(ttlMS)*time.Millisecond
	if p.Advertise, p.BlobDir, err = loadMemberEnv(s.Addr, f); err != nil {
		return err
	}
	s.Postgres = p
	return nil
}

// pool connects to the database of p (TLS as its URL's sslmode,
// sslrootcert, sslcert and sslkey say).
func (p postgresSettings) pool(ctx context.Context) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(p.URL)
	if err != nil {
		return nil, errors.New("TETHER_POSTGRES_URL is not a PostgreSQL URL pgx can read")
	}
	cfg.MaxConns = int32(p.PoolSize)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting to PostgreSQL at %s: %w", p.where(), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error connecting to PostgreSQL at %s: %w", p.where(), err)
	}
	return pool, nil
}

// where names the database in logs and errors, without its password.
func (p postgresSettings) where() string {
	cfg, err := pgxpool.ParseConfig(p.URL)
	if err != nil {
		return "(TETHER_POSTGRES_URL)"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
}

// schema brings the schema up to this binary's version (auto) or refuses
// one behind it (refuse).
func (p postgresSettings) schema(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	if p.Migrate == migrateRefuse {
		if err := pgschema.Check(ctx, pool, p.Schema); err != nil {
			return fmt.Errorf("TETHER_POSTGRES_MIGRATE=refuse: %w", err)
		}
		return nil
	}
	applied, err := pgschema.Migrate(ctx, pool, p.Schema)
	if err != nil {
		return fmt.Errorf("error migrating PostgreSQL schema %s: %w", p.Schema, err)
	}
	if len(applied) > 0 {
		log.Info("migrated the PostgreSQL schema", "schema", p.Schema, "applied", applied)
	}
	return nil
}

// servePostgres runs this server as one of a cluster on PostgreSQL until a
// signal: it connects, brings the schema to its version, joins, serves the
// front on ln, and at the signal hands its shards over and leaves.
func servePostgres(ctx context.Context, s settings, ln, metricsLn net.Listener, log *slog.Logger, printBanner func(url string) error) error {
	p := s.Postgres
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pool, err := p.pool(openCtx)
	if err != nil {
		ln.Close()
		return err
	}
	defer pool.Close()
	if err := p.schema(openCtx, pool, log); err != nil {
		ln.Close()
		return err
	}
	cfg := s.Server
	cfg.DataDir = ""
	cfg.BlobDir = p.BlobDir
	node, err := cluster.Open(openCtx, cluster.Config{
		Postgres: pool, Schema: p.Schema, Shards: p.Shards, Advertise: p.Advertise,
		LeaseTTL: p.LeaseTTL, Server: cfg, Logger: log,
	})
	if err != nil {
		ln.Close()
		return fmt.Errorf("PostgreSQL at %s: %w", p.where(), err)
	}
	log.Info("tether is serving on PostgreSQL", "addr", ln.Addr().String(), "advertise", p.Advertise, "id", node.ID(),
		"database", p.where(), "schema", p.Schema, "shards", p.Shards, "lease_ttl", p.LeaseTTL.String(), buildLogAttrs())
	serveMetrics(metricsLn, node.ServeMetrics, log)
	if err := printBanner("http://" + ln.Addr().String()); err != nil {
		return err
	}
	return serveUntilSignal(log, func() error { return node.Serve(ln) }, node.Shutdown, "handing the shards over and draining")
}
