package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Tether on etcd: every stage starts cfg.servers processes with
// TETHER_STORE=etcd over the cluster -etcd-endpoints names, each stage under
// a fresh prefix (so every scenario starts on an empty store, as with a fresh
// Badger data dir), and the clients are spread over cfg.tenants tenants:
// client i is in tenant i mod tenants and talks to server i mod servers, so
// shards (tenant -> shard by hash) spread over the servers and a share of the
// requests is forwarded to the shard's owner, as behind a load balancer.

const (
	storeBadger = "badger"
	storeEtcd   = "etcd"

	// autoTenantsMax is the tenants of -tenants 0 with etcd: the default
	// shard count, so that most shards get some load.
	autoTenantsMax = 16

	// settleTimeout bounds the wait for every tenant's shard to have an
	// owner that every server can reach.
	settleTimeout = 60 * time.Second
	// settleStable is how long the shards' split over the servers must stay
	// the same before a stage starts: a server that just started takes its
	// shards over within about one watch round trip.
	settleStable = time.Second
)

// etcdScenarios are the scenarios that run on etcd and on PostgreSQL: they
// spread over tenants. (e) and (f) watch one parent or one event log, and (g) restarts
// one server on its data dir.
var etcdScenarios = []string{"a", "h", "i", "b", "c", "d"}

// checkStore validates the store flags and fills in the defaults.
func (c *config) checkStore(endpoints string) error {
	for e := range strings.SplitSeq(endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			c.etcdEndpoints = append(c.etcdEndpoints, e)
		}
	}
	if c.store != storeEtcd && len(c.etcdEndpoints) > 0 {
		return fmt.Errorf("-etcd-endpoints needs -store etcd")
	}
	if c.store != storeEtcd && c.reference.tool != "" {
		return fmt.Errorf("-etcd-benchmark needs -store etcd")
	}
	if c.store == storePostgres && c.postgresURL == "" {
		return fmt.Errorf("-store postgres needs -postgres-url")
	}
	if c.vsRiver && c.postgresURL == "" {
		return fmt.Errorf("-vs-river needs -postgres-url (River runs on PostgreSQL)")
	}
	switch c.store {
	case storeBadger:
		if c.servers != 1 {
			return fmt.Errorf("-servers %d needs -store etcd or postgres (a Badger data dir has one server)", c.servers)
		}
	case storeEtcd:
		if len(c.etcdEndpoints) == 0 {
			return fmt.Errorf("-store etcd needs -etcd-endpoints")
		}
		if c.servers < 1 {
			return fmt.Errorf("-servers must be at least 1")
		}
		if !strings.HasPrefix(c.etcdPrefix, "/") || !strings.HasSuffix(c.etcdPrefix, "/") {
			return fmt.Errorf("-etcd-prefix %q must start and end with /", c.etcdPrefix)
		}
		if c.etcdShards < 0 {
			return fmt.Errorf("-etcd-shards must not be negative")
		}
		if c.reference.tool != "" && c.reference.total < 1 {
			return fmt.Errorf("-etcd-benchmark-total must be positive")
		}
		if ms := c.etcdLeaseTTL.Milliseconds(); ms != 0 && (ms < 1000 || ms > 60000) {
			return fmt.Errorf("-etcd-lease-ttl must be 1s to 60s")
		}
		if err := c.sharedScenarios(); err != nil {
			return err
		}
	case storePostgres:
		if c.servers < 1 {
			return fmt.Errorf("-servers must be at least 1")
		}
		if err := c.sharedScenarios(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("-store %q: want badger, etcd or postgres", c.store)
	}
	switch {
	case c.tenants < 0:
		return fmt.Errorf("-tenants must not be negative")
	case c.tenants == 0 && c.isShared():
		c.tenants = min(c.clients, autoTenantsMax)
	case c.tenants == 0:
		c.tenants = 1
	}
	if c.tenants > 1 && slices.ContainsFunc(c.scenarios, func(s string) bool { return !slices.Contains(etcdScenarios, s) }) {
		return fmt.Errorf("-tenants %d: scenarios e, f and g run on one tenant", c.tenants)
	}
	return nil
}

// sharedScenarios checks that every scenario asked for runs on a shared
// store (etcd or PostgreSQL).
func (c config) sharedScenarios() error {
	for _, s := range c.scenarios {
		if !slices.Contains(etcdScenarios, s) {
			return fmt.Errorf("scenario %s does not run with -store %s (want some of %s)", s, c.store, strings.Join(etcdScenarios, ","))
		}
	}
	return nil
}

// tenantOf is client i's tenant.
func (c config) tenantOf(i int) int { return i % c.tenants }

// describeStore is the store line of the report.
func (c config) describeStore() string {
	switch c.store {
	case storeBadger:
		return "badger (one data dir per server), 1 server, 1 tenant"
	case storePostgres:
		return c.describePostgres()
	}
	shards := "default"
	if c.etcdShards > 0 {
		shards = strconv.Itoa(c.etcdShards)
	}
	return fmt.Sprintf("etcd at %s (shards %s), %d servers per stage, %d tenants (client i: tenant i mod %d, server i mod %d)",
		strings.Join(c.etcdEndpoints, ","), shards, c.servers, c.tenants, c.tenants, c.servers)
}

// openEtcd connects the harness to etcd (to remove each stage's keys after
// it) and picks the run's prefix.
func (b *bench) openEtcd() error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: b.cfg.etcdEndpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("error connecting to etcd: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Get(ctx, b.cfg.etcdPrefix, clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return fmt.Errorf("etcd at %s does not answer: %w", strings.Join(b.cfg.etcdEndpoints, ","), err)
	}
	var raw [4]byte
	if _, err := rand.Read(raw[:]); err != nil {
		cli.Close()
		return err
	}
	b.etcd = cli
	b.runPrefix = b.cfg.etcdPrefix + hex.EncodeToString(raw[:]) + "/"
	return nil
}

func (b *bench) closeEtcd() {
	if b.etcd != nil {
		b.etcd.Close()
	}
}

// stagePrefix is a fresh prefix for a stage's servers.
func (b *bench) stagePrefix(name string) string {
	b.stages++
	return fmt.Sprintf("%s%02d-%s/", b.runPrefix, b.stages, name)
}

// dropPrefix deletes a finished stage's keys (kept with -keep) and says how
// many there were.
func (b *bench) dropPrefix(prefix string) (int64, error) {
	if b.etcd == nil || prefix == "" {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if b.cfg.keep {
		resp, err := b.etcd.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0, err
		}
		return resp.Count, nil
	}
	// In ranges of at most 10 000 keys: one delete of a 200 000-node stage
	// outlasts etcd's request timeout.
	var deleted int64
	for {
		page, err := b.etcd.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(10000))
		if err != nil {
			return deleted, fmt.Errorf("error listing the stage's keys under %s: %w", prefix, err)
		}
		if len(page.Kvs) == 0 {
			return deleted, nil
		}
		last := string(page.Kvs[len(page.Kvs)-1].Key) + "\x00"
		resp, err := b.etcd.Delete(ctx, string(page.Kvs[0].Key), clientv3.WithRange(last))
		if err != nil {
			return deleted, fmt.Errorf("error deleting the stage's keys under %s: %w", prefix, err)
		}
		deleted += resp.Deleted
	}
}

// etcdEnv is the environment of a server of a stage under prefix, listening
// on addr.
func (l *launcher) etcdEnv(prefix, addr string) []string {
	env := []string{
		"TETHER_STORE=etcd",
		"TETHER_ETCD_ENDPOINTS=" + strings.Join(l.cfg.etcdEndpoints, ","),
		"TETHER_ETCD_PREFIX=" + prefix,
		"TETHER_ADVERTISE_URL=http://" + addr,
	}
	if l.cfg.etcdShards > 0 {
		env = append(env, "TETHER_ETCD_SHARDS="+strconv.Itoa(l.cfg.etcdShards))
	}
	if l.cfg.etcdPipeline > 0 {
		env = append(env, "TETHER_ETCD_PIPELINE="+strconv.Itoa(l.cfg.etcdPipeline))
	}
	if l.cfg.etcdMaxOps > 0 {
		env = append(env, "TETHER_ETCD_MAX_TXN_OPS="+strconv.Itoa(l.cfg.etcdMaxOps))
	}
	if ms := l.cfg.etcdLeaseTTL.Milliseconds(); ms > 0 {
		env = append(env, "TETHER_ETCD_LEASE_TTL_MS="+strconv.FormatInt(ms, 10))
	}
	return env
}

// settle waits until every tenant answers through every server (each
// tenant's shard has an owner: a request during an election answers 503)
// and every shard is owned by exactly one server, as the servers' /metrics
// count them (tether_cluster_shards_owned summed = tether_cluster_shards),
// so that the handoffs that follow the servers' starts are over.
func (s *stage) settle() (time.Duration, string, error) {
	began := time.Now()
	deadline := began.Add(settleTimeout)
	var last string
	var stableSince time.Time
	for {
		owned, shards, ok := clusterShards(s.srvs)
		if !ok {
			break // a server without those gauges: the answers below decide
		}
		// Every shard owned once, and the split unchanged for settleStable.
		split := fmt.Sprint(owned)
		if split != last {
			last, stableSince = split, time.Now()
		}
		if sum(owned) == shards && time.Since(stableSince) >= settleStable {
			break
		}
		if time.Now().After(deadline) {
			return 0, "", fmt.Errorf("shards owned per server %v of %.0f after %v", owned, shards, settleTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for si, srv := range s.srvs {
		for t, tok := range s.b.dispTokens {
			c := newCaller(srv.url, tok, s.cl)
			for {
				st, body, err := c.do("GET", "/v1/tenant", nil)
				if err == nil && st == http.StatusOK {
					break
				}
				if time.Now().After(deadline) {
					return 0, "", fmt.Errorf("tenant %s through server %d did not answer within %v: status %d, %v: %.300s",
						tenantName(s.b.cfg.tenants, t), si, settleTimeout, st, err, body)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	if last == "" {
		last = "not reported"
	}
	return time.Since(began), last, nil
}

func sum(fs []float64) float64 {
	var t float64
	for _, f := range fs {
		t += f
	}
	return t
}

// clusterShards reads tether_cluster_shards_owned of every server and
// tether_cluster_shards; ok is false when a server does not report them.
func clusterShards(srvs []*serverProc) (owned []float64, shards float64, ok bool) {
	c := http.Client{Timeout: 5 * time.Second}
	for _, p := range srvs {
		resp, err := c.Get(p.url + "/metrics")
		if err != nil {
			return nil, 0, false
		}
		g := parseGauges(resp.Body, "tether_cluster_shards_owned", "tether_cluster_shards")
		resp.Body.Close()
		o, ok1 := g["tether_cluster_shards_owned"]
		n, ok2 := g["tether_cluster_shards"]
		if !ok1 || !ok2 {
			return nil, 0, false
		}
		owned = append(owned, o)
		shards = n
	}
	return owned, shards, true
}
