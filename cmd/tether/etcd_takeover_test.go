package main

// A renewal once answered is kept across a takeover: on etcd, a shard's new owner honours every renewal the
// old owner answered. A renewal is answered once applied, before etcd has
// committed it. Here the old owner's connection to etcd is frozen (a proxy
// holds its bytes), so a renewal it then answers is surely never committed,
// and it is killed with SIGKILL right after the answer. The new owner takes
// over after the lease's stored expiry and before the expiry the holder was
// told; until that expiry no challenger may claim the node, and the holder
// may renew through the new owner.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/etcdtest"
)

func TestEtcdTakeoverHonoursAnsweredRenewal(t *testing.T) {
	const (
		ttl = 5 * time.Second // the holder's lease
		// The renewal comes this long after the claim, so that the stored
		// expiry (the claim's) passes before the takeover: that comes when
		// A's etcd session lapses (efLeaseTTL after its last keepalive got
		// through, a third of that at most before the freeze) plus an
		// election and the shard's opening, so 1.3-3 s after the renewal.
		renewAfter = 4 * time.Second
	)
	c := etcdtest.Start(t, 1)
	hc := httpClient(t)
	proxy := startEtcdProxy(t, strings.TrimPrefix(c.Endpoints[0], "http://"))
	a, b, idA, victims := startPairVia(t, c, hc, proxy.URL())
	tn := victims[0]
	ctx := context.Background()
	disp := a.as(hc, mintTenant(t, tn, "dispatcher", "dispatcher"))
	holderTok, thiefTok := mintTenant(t, tn, "holder", "worker"), mintTenant(t, tn, "thief", "worker")
	const node = "takeover-node"
	if res, err := disp.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(node), Type: "task"}); err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %s", err, body(res))
	}
	claim, err := a.as(hc, holderTok).ClaimNodeWithResponse(ctx, node, client.ClaimRequest{TTLMS: ptr(ttl.Milliseconds())})
	if err != nil || claim.JSON200 == nil {
		t.Fatalf("claim: %v %s", err, body(claim))
	}
	stored := claim.JSON200.Lease.ExpiresAt // durable: a claim is answered once committed
	fence := claim.JSON200.Lease.Fence
	if by := claim.HTTPResponse.Header.Get(efServedBy); by != idA {
		t.Fatalf("the claim was served by %s, not by A (%s)", by, idA)
	}

	time.Sleep(renewAfter)
	// Nothing A sends reaches etcd from here on. A still knows its session
	// lease fresh for a while (half its TTL after the last keepalive), so it
	// answers a renewal once applied.
	proxy.Freeze()
	renew, err := a.as(hc, holderTok).RenewLeaseWithResponse(ctx, node, client.RenewRequest{Fence: ptr(fence)})
	answered := time.Now()
	a.kill9()
	proxy.Cut()
	if err != nil || renew.JSON200 == nil {
		t.Fatalf("the renewal through A, cut off from etcd: %v %s (A answers only while its etcd lease is fresh)", err, body(renew))
	}
	promised := renew.JSON200.Lease.ExpiresAt
	t.Logf("claimed with ttl %v: stored expiry %s; renewed through A, cut off from etcd (never committed): answered expiry %s; A killed with SIGKILL",
		ttl, stored.Format("15:04:05.000"), promised.Format("15:04:05.000"))

	// The thief tries through B until the answered expiry; the holder renews
	// through B once B serves the tenant.
	thief, holder := b.as(hc, thiefTok), b.as(hc, holderTok)
	var takeover time.Time
	tries := 0
	for time.Now().Before(promised.Add(-100 * time.Millisecond)) {
		res, err := thief.ClaimNodeWithResponse(ctx, node, client.ClaimRequest{TTLMS: ptr(int64(60000))})
		at := time.Now()
		if err != nil || res.StatusCode() == http.StatusServiceUnavailable {
			time.Sleep(20 * time.Millisecond) // no owner yet
			continue
		}
		tries++
		if takeover.IsZero() {
			takeover = at
			t.Logf("B serves the tenant %v after the renewal's answer: %v after the stored expiry, %v before the answered one",
				at.Sub(answered).Round(time.Millisecond), at.Sub(stored).Round(time.Millisecond), promised.Sub(at).Round(time.Millisecond))
			if !at.After(stored) {
				t.Fatalf("B took over before the stored expiry (%s): the test proves nothing; its timing needs adjusting", stored.Format("15:04:05.000"))
			}
		}
		switch res.StatusCode() {
		case http.StatusOK:
			t.Fatalf("the thief claimed the node at %s (fence %d), %v before the expiry the holder was last answered (%s): an answered renewal was lost in the takeover",
				at.Format("15:04:05.000"), res.JSON200.Lease.Fence, promised.Sub(at).Round(time.Millisecond), promised.Format("15:04:05.000"))
		case http.StatusConflict:
		default:
			t.Fatalf("the thief's claim: %d %s", res.StatusCode(), res.Body)
		}
		if tries == 1 {
			r, err := holder.RenewLeaseWithResponse(ctx, node, client.RenewRequest{Fence: ptr(fence)})
			if err != nil || r.JSON200 == nil {
				t.Fatalf("the holder's renewal through B after the takeover: %v %s", err, body(r))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if takeover.IsZero() {
		t.Fatalf("B did not serve the tenant before the answered expiry (%s): the test proves nothing; its timing needs adjusting", promised.Format("15:04:05.000"))
	}
	t.Logf("the thief's %d claims between the takeover and the answered expiry were all refused; the holder renewed through B", tries)
}

// startPairVia is startSpreadPair with A talking to etcd at endpointsA (a
// proxy) instead of directly.
func startPairVia(t *testing.T, c *etcdtest.Cluster, hc *http.Client, endpointsA string) (a, b *proc, idA string, victims []string) {
	t.Helper()
	addrA, addrB := spreadAddrs(t)
	a = startEtcdServerAt(t, c, "A", addrA, "TETHER_ETCD_ENDPOINTS="+endpointsA)
	b = startEtcdServerAt(t, c, "B", addrB)
	idA = serverID(t, hc, a)
	deadline := time.Now().Add(30 * time.Second)
	for {
		victims = tenantsOf(owners(t, hc, b), idA)
		if len(victims) > 0 && len(victims) < len(efTenants) {
			return a, b, idA, victims
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tenants did not spread over both servers in 30 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
