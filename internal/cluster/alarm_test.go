package cluster

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadyReportsAnEtcdAlarm: with etcd's NOSPACE alarm raised (as when its
// database reaches the quota), /ready answers 503 naming the alarm on every
// server and writes answer 503, with nothing acknowledged lost; once the
// alarm is disarmed, /ready is 200 again and writes are served.
func TestReadyReportsAnEtcdAlarm(t *testing.T) {
	etcd, a, b := startPair(t)
	if !etcd.Embedded() {
		t.Skip("needs members whose alarms the test can raise")
	}
	tenants := writeEverywhere(t, a)
	etcd.RaiseNoSpace(0)
	for _, n := range []*testNode{a, b} {
		st, _, body := call(t, http.MethodGet, n.url+"/ready", "", nil)
		require.Equal(t, http.StatusServiceUnavailable, st, string(body))
		require.Contains(t, string(body), "NOSPACE")
	}
	tok := token(t, tenants[0])
	start := time.Now()
	for {
		st, _, body := call(t, http.MethodPost, a.url+"/v1/nodes", tok, map[string]any{"type": "task", "queue": "q"})
		if st == http.StatusServiceUnavailable {
			break
		}
		require.Equal(t, http.StatusCreated, st, string(body))
		require.Less(t, time.Since(start), 10*time.Second, "writes still succeed with NOSPACE raised")
	}
	t.Logf("with NOSPACE raised, writes answer 503 after %v", time.Since(start))
	etcd.DisarmAlarms()
	back := time.Now()
	for _, n := range []*testNode{a, b} {
		require.Eventually(t, func() bool {
			st, _, _ := call(t, http.MethodGet, n.url+"/ready", "", nil)
			return st == http.StatusOK
		}, 10*time.Second, 20*time.Millisecond, "ready again once the alarm is disarmed")
	}
	require.Eventually(t, func() bool {
		st, _, body := call(t, http.MethodPost, a.url+"/v1/nodes", tok, map[string]any{"type": "task", "queue": "q"})
		if st != http.StatusCreated && st != http.StatusServiceUnavailable {
			t.Fatalf("a write after the alarm: %d %s", st, body)
		}
		return st == http.StatusCreated
	}, 20*time.Second, 50*time.Millisecond, "writes are served again once the alarm is disarmed")
	t.Logf("alarm disarmed: writes served again after %v", time.Since(back))
	requireKept(t, a, tenants)
	requireKept(t, b, tenants)
}
