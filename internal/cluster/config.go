package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/pgschema"
	"github.com/tether-run/tether/internal/server"
)

// Defaults and bounds of the settings.
const (
	DefaultShards   = 16
	MaxShards       = 100 // shard numbers are two decimal digits
	DefaultLeaseTTL = 5 * time.Second
	MinLeaseTTL     = time.Second
	MaxLeaseTTL     = time.Minute
	DefaultPrefix   = "/tether/"
	DefaultSchema   = "tether"
)

// Config is one server of a cluster, on etcd (Client) or on PostgreSQL
// (Postgres): exactly one of them.
type Config struct {
	Client *clientv3.Client
	// Prefix is where the cluster's keys live in etcd (DefaultPrefix when
	// empty); it ends in "/".
	Prefix string
	// Postgres is the database the cluster lives in, its tables in Schema
	// (DefaultSchema when empty), migrated already (pgschema.Migrate).
	Postgres *pgxpool.Pool
	Schema   string
	// Shards is the cluster's fixed shard count (DefaultShards when zero).
	Shards int
	// Advertise is the URL other servers reach this one at
	// (http://host:port); requests for shards owned here are sent there.
	Advertise string
	// LeaseTTL is the session lease: how long a crashed server keeps its
	// shards (DefaultLeaseTTL when zero; on etcd whole seconds, rounded up).
	LeaseTTL time.Duration
	// MaxTxnOps (etcd only) is etcd's --max-txn-ops (128, etcd's default, when zero): a
	// write group with more operations goes through the shard's commit log
	// in etcd (several transactions) instead of one.
	MaxTxnOps int
	// Pipeline (etcd only) is how many write groups' transactions a shard keeps in
	// flight at once (1, one at a time, when zero; kv.EtcdOptions.Pipeline).
	Pipeline int
	// Server is the template of every shard's server. DataDir, InMemory and
	// KV are set per shard; BlobDir, when set, is the directory shared by
	// every server, each shard's blobs in BlobDir/shard-NN. Without it blob
	// uploads answer 503.
	Server server.Config
	Logger *slog.Logger
	// DrainTimeout bounds how long a shard being closed waits for its
	// requests (30 s when zero).
	DrainTimeout time.Duration
}

// withDefaults fills the zero settings and checks the others.
func (c Config) withDefaults() (Config, error) {
	if (c.Client == nil) == (c.Postgres == nil) {
		return c, errors.New("cluster: give an etcd client or a PostgreSQL pool, and only one")
	}
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if c.Postgres != nil {
		if err := pgschema.ValidSchema(c.Schema); err != nil {
			return c, err
		}
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if !strings.HasSuffix(c.Prefix, "/") {
		c.Prefix += "/"
	}
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
	if c.Shards < 1 || c.Shards > MaxShards {
		return c, fmt.Errorf("the shard count must be from 1 to %d, not %d", MaxShards, c.Shards)
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.LeaseTTL < MinLeaseTTL || c.LeaseTTL > MaxLeaseTTL {
		return c, fmt.Errorf("the lease TTL must be from %v to %v, not %v", MinLeaseTTL, MaxLeaseTTL, c.LeaseTTL)
	}
	u, err := url.Parse(c.Advertise)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("the advertise URL must be http(s)://host:port, not %q", c.Advertise)
	}
	c.Advertise = strings.TrimSuffix(c.Advertise, "/")
	c.Logger = logger.OrDiscard(c.Logger)
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 30 * time.Second
	}
	return c, nil
}

// leaseSeconds is the lease TTL as etcd takes it.
func (c Config) leaseSeconds() int {
	return int((c.LeaseTTL + time.Second - 1) / time.Second)
}

// shardName is a shard's two-digit number.
func shardName(k int) string { return fmt.Sprintf("%02d", k) }
