package main

import (
	"strings"
	"testing"
)

func TestCheckStore(t *testing.T) {
	base := func() config {
		return config{store: storeBadger, clients: 32, servers: 1, etcdPrefix: "/tether-bench/", scenarios: []string{"a", "b"}}
	}
	cases := []struct {
		name      string
		edit      func(c *config)
		endpoints string
		err       string // "" = valid
		tenants   int
	}{
		{"badger default", func(c *config) {}, "", "", 1},
		{"badger servers", func(c *config) { c.servers = 3 }, "", "-servers 3 needs -store etcd", 0},
		{"badger endpoints", func(c *config) {}, "http://e:2379", "needs -store etcd", 0},
		{"etcd without endpoints", func(c *config) { c.store = storeEtcd }, "", "needs -etcd-endpoints", 0},
		{"etcd auto tenants", func(c *config) { c.store = storeEtcd; c.servers = 3 }, "http://a:2379, http://b:2379", "", 16},
		{"etcd few clients", func(c *config) { c.store = storeEtcd; c.clients = 4 }, "http://a:2379", "", 4},
		{"etcd tenants given", func(c *config) { c.store = storeEtcd; c.tenants = 5 }, "http://a:2379", "", 5},
		{"etcd scenario g", func(c *config) { c.store = storeEtcd; c.scenarios = []string{"a", "g"} }, "http://a:2379", "scenario g does not run", 0},
		{"etcd prefix", func(c *config) { c.store = storeEtcd; c.etcdPrefix = "x/" }, "http://a:2379", "must start and end with /", 0},
		{"etcd lease ttl", func(c *config) { c.store = storeEtcd; c.etcdLeaseTTL = 500e6 }, "http://a:2379", "1s to 60s", 0},
		{"etcd no servers", func(c *config) { c.store = storeEtcd; c.servers = 0 }, "http://a:2379", "at least 1", 0},
		{"unknown store", func(c *config) { c.store = "bolt" }, "", "want badger, etcd or postgres", 0},
		{"postgres without url", func(c *config) { c.store = storePostgres }, "", "needs -postgres-url", 0},
		{"postgres auto tenants", func(c *config) { c.store = storePostgres; c.postgresURL = "postgres://h/db"; c.servers = 2 }, "", "", 16},
		{"postgres scenario e", func(c *config) {
			c.store = storePostgres
			c.postgresURL = "postgres://h/db"
			c.scenarios = []string{"e"}
		}, "", "scenario e does not run with -store postgres", 0},
		{"postgres endpoints", func(c *config) { c.store = storePostgres; c.postgresURL = "postgres://h/db" }, "http://e:2379", "needs -store etcd", 0},
		{"river without url", func(c *config) { c.vsRiver = true }, "", "-vs-river needs -postgres-url", 0},
		{"river on badger", func(c *config) { c.vsRiver = true; c.postgresURL = "postgres://h/db" }, "", "", 1},
		{"badger tenants with e", func(c *config) { c.tenants = 2; c.scenarios = []string{"e"} }, "", "run on one tenant", 0},
		{"badger tenants", func(c *config) { c.tenants = 2 }, "", "", 2},
	}
	for _, tc := range cases {
		c := base()
		tc.edit(&c)
		err := c.checkStore(tc.endpoints)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
		case tc.err == "" && c.tenants != tc.tenants:
			t.Errorf("%s: %d tenants, want %d", tc.name, c.tenants, tc.tenants)
		}
	}
}

func TestEtcdEnv(t *testing.T) {
	c := config{store: storeEtcd, etcdEndpoints: []string{"http://a:2379", "http://b:2379"}, etcdShards: 8, etcdLeaseTTL: 2e9}
	l := &launcher{cfg: c}
	got := strings.Join(l.etcdEnv("/p/01-a/", "127.0.0.1:9000"), " ")
	want := "TETHER_STORE=etcd TETHER_ETCD_ENDPOINTS=http://a:2379,http://b:2379 TETHER_ETCD_PREFIX=/p/01-a/ " +
		"TETHER_ADVERTISE_URL=http://127.0.0.1:9000 TETHER_ETCD_SHARDS=8 TETHER_ETCD_LEASE_TTL_MS=2000"
	if got != want {
		t.Errorf("env\n got %s\nwant %s", got, want)
	}
}

func TestTenantNames(t *testing.T) {
	if got := tenantName(1, 0); got != "bench" {
		t.Errorf("one tenant: %q, want bench (the single-server runs keep their tenant)", got)
	}
	if got := tenantName(16, 3); got != "bench-03" {
		t.Errorf("tenant 3 of 16: %q", got)
	}
	c := config{tenants: 4}
	if c.tenantOf(6) != 2 {
		t.Errorf("client 6 of 4 tenants in %d, want 2", c.tenantOf(6))
	}
}

func TestParseStoreCounters(t *testing.T) {
	page := `# HELP tether_store_writes_total Writes.
# TYPE tether_store_writes_total counter
tether_store_writes_total{shard="03"} 10
tether_store_writes_total{shard="07"} 5
tether_store_fsyncs_total 4
tether_store_keys_written_total{shard="03"} 80
tether_store_bytes_written_total{shard="03"} 1.5e3
tether_store_fsync_seconds_total{shard="03"} 0.25
tether_store_writes_totalx 99
tether_cluster_forwarded_requests_total 7
`
	got := parseStoreCounters(strings.NewReader(page))
	want := storeUsage{writes: 15, commits: 4, keys: 80, bytes: 1500, commitSeconds: 0.25, forwarded: 7}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestParseGauges(t *testing.T) {
	page := "# TYPE tether_cluster_shards gauge\ntether_cluster_shards 16\ntether_cluster_shards_owned 5\ntether_cluster_members 3\n"
	g := parseGauges(strings.NewReader(page), "tether_cluster_shards_owned", "tether_cluster_shards")
	if len(g) != 2 || g["tether_cluster_shards"] != 16 || g["tether_cluster_shards_owned"] != 5 {
		t.Errorf("got %v", g)
	}
}
