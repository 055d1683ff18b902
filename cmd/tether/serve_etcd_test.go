package main

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/etcdtest"
)

// etcdEnv is serverEnv for a server of the cluster at etcd's prefix.
func etcdEnv(t *testing.T, etcd *etcdtest.Cluster, addr string, extra ...string) []string {
	env := serverEnv(t.TempDir(), addr,
		"TETHER_STORE=etcd",
		"TETHER_ETCD_ENDPOINTS="+strings.Join(etcd.Endpoints, ","),
		"TETHER_ETCD_PREFIX="+etcd.Prefix(),
		"TETHER_ETCD_SHARDS=4",
	)
	return append(env, extra...)
}

// TestServeEtcdRefusesBadSettings: a wrong etcd setting stops `tether
// serve` at once with a message naming it.
func TestServeEtcdRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"unknown store", []string{"TETHER_STORE=mysql"}, "TETHER_STORE"},
		{"no endpoints", []string{"TETHER_STORE=etcd"}, "TETHER_ETCD_ENDPOINTS"},
		{"bad endpoint", []string{"TETHER_STORE=etcd", "TETHER_ETCD_ENDPOINTS=localhost"}, "TETHER_ETCD_ENDPOINTS"},
		{"short lease", []string{"TETHER_STORE=etcd", "TETHER_ETCD_ENDPOINTS=http://127.0.0.1:1", "TETHER_ETCD_LEASE_TTL_MS=500"}, "TETHER_ETCD_LEASE_TTL_MS"},
		{"no shards", []string{"TETHER_STORE=etcd", "TETHER_ETCD_ENDPOINTS=http://127.0.0.1:1", "TETHER_ETCD_SHARDS=0"}, "TETHER_ETCD_SHARDS"},
		{"bad prefix", []string{"TETHER_STORE=etcd", "TETHER_ETCD_ENDPOINTS=http://127.0.0.1:1", "TETHER_ETCD_PREFIX=tether"}, "TETHER_ETCD_PREFIX"},
		{"bad advertise", []string{"TETHER_STORE=etcd", "TETHER_ETCD_ENDPOINTS=http://127.0.0.1:1", "TETHER_ADVERTISE_URL=somewhere"}, "TETHER_ADVERTISE_URL"},
		{"no blob dir", []string{"TETHER_STORE=etcd", "TETHER_ETCD_ENDPOINTS=http://127.0.0.1:1", "TETHER_BLOB_DIR=/no/such/dir"}, "TETHER_BLOB_DIR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			p := launch(t, tc.name, addr, serverEnv(t.TempDir(), addr, tc.env...), "serve")
			if code := p.waitExit(refusalTimeout); code == 0 {
				t.Fatalf("tether serve exited 0")
			}
			if !strings.Contains(p.stderr.String(), tc.want) {
				t.Errorf("stderr does not name %s:\n%s", tc.want, p.stderr.String())
			}
		})
	}
}

// TestServeEtcdTwoServers: two `tether serve` processes over one etcd
// cluster answer for the same tenant alike; when one stops (SIGTERM) the
// other serves everything, with what was written before; a third started
// with another shard count is refused.
func TestServeEtcdTwoServers(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	addr1, addr2 := freeAddr(t), freeAddr(t)
	p1 := launch(t, "server 1", addr1, etcdEnv(t, etcd, addr1), "serve")
	p2 := launch(t, "server 2", addr2, etcdEnv(t, etcd, addr2), "serve")
	p1.waitReady()
	p2.waitReady()
	hc := httpClient(t)
	tok := mint(t, "alice", "admin")
	c1, c2 := p1.as(hc, tok), p2.as(hc, tok)
	ctx := context.Background()

	// Until the shard has an owner, a request may be refused 503: retry.
	retry := func(what string, call func() (int, error)) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, err := call()
			if err == nil && code != http.StatusServiceUnavailable {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %d, %v", what, code, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	retry("create through server 1", func() (int, error) {
		r, err := c1.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("kept"), Type: "task", Queue: ptr("default")})
		if err != nil {
			return 0, err
		}
		if r.StatusCode() != http.StatusCreated && r.StatusCode() != http.StatusServiceUnavailable {
			t.Fatalf("create: %d %s", r.StatusCode(), r.Body)
		}
		return r.StatusCode(), nil
	})
	get := func(c *client.ClientWithResponses, what string) {
		retry(what, func() (int, error) {
			r, err := c.GetNodeWithResponse(ctx, "kept")
			if err != nil {
				return 0, err
			}
			if r.StatusCode() != http.StatusOK && r.StatusCode() != http.StatusServiceUnavailable {
				t.Fatalf("%s: %d %s", what, r.StatusCode(), r.Body)
			}
			return r.StatusCode(), nil
		})
	}
	get(c1, "read through server 1")
	get(c2, "read through server 2")

	// Another shard count is refused, naming both.
	addr3 := freeAddr(t)
	p3 := launch(t, "server 3", addr3, etcdEnv(t, etcd, addr3, "TETHER_ETCD_SHARDS=5"), "serve")
	if code := p3.waitExit(refusalTimeout); code == 0 {
		t.Fatal("a server with another shard count started")
	}
	if s := p3.stderr.String(); !strings.Contains(s, "has 4 shards") || !strings.Contains(s, "with 5") {
		t.Errorf("the refusal does not name both shard counts:\n%s", s)
	}

	// Blobs need TETHER_BLOB_DIR; backups are etcd's.
	resp, err := c1.UploadBlobWithBodyWithResponse(ctx, "text/plain", strings.NewReader("hello"))
	if err != nil || resp.StatusCode() != http.StatusServiceUnavailable || !strings.Contains(string(resp.Body), "TETHER_BLOB_DIR") {
		t.Errorf("blob upload without TETHER_BLOB_DIR: %v %v", resp.StatusCode(), err)
	}

	// Stop the server that owns the tenant's shard: the other takes it over.
	owner, other, otherClient := p1, p2, c2
	if !owns(t, hc, p1, shardOf("acme", 4)) {
		owner, other, otherClient = p2, p1, c1
	}
	start := time.Now()
	owner.signal(syscall.SIGTERM)
	if code := owner.waitExit(30 * time.Second); code != 0 {
		t.Fatalf("%s exited %d", owner.name, code)
	}
	get(otherClient, "read through "+other.name+" after "+owner.name+" stopped")
	t.Logf("%s stopped and %s served its shards within %v", owner.name, other.name, time.Since(start))
}

// shardOf is cluster's tenant -> shard.
func shardOf(tenant string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tenant))
	return int(h.Sum32() % uint32(shards))
}

// owns says whether p serves shard k, by its /ready.
func owns(t *testing.T, hc *http.Client, p *proc, k int) bool {
	t.Helper()
	resp, err := hc.Get(p.url + "/ready")
	if err != nil {
		t.Fatalf("%s: /ready: %v", p.name, err)
	}
	defer resp.Body.Close()
	var ready struct {
		ShardsOwned []int `json:"shards_owned"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ready); err != nil {
		t.Fatalf("%s: /ready: %v", p.name, err)
	}
	return slices.Contains(ready.ShardsOwned, k)
}
