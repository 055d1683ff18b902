package intake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testserver"
)

func TestNotificationWakesTheConsumer(t *testing.T) {
	t.Parallel()
	s, pool := startTether(t), database(t)
	// Polling once a minute: only the notification can be in time.
	c := consume(t, pool, s.creator, func(cfg *Config) { cfg.PollInterval = MaxPollInterval })
	c.TestSignals.Listening.Wait(t)
	id := enqueue(t, pool, "acme", `{"type":"email","queue":"mail"}`)
	waitCreated(t, c, id)
}

func TestListenerComesBackAfterItsConnectionDies(t *testing.T) {
	t.Parallel()
	s, pool := startTether(t), database(t)
	c := consume(t, pool, s.creator, func(cfg *Config) { cfg.PollInterval = MaxPollInterval })
	c.TestSignals.Listening.Wait(t)
	var killed bool
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&killed))
	require.True(t, killed)
	c.TestSignals.Listening.Wait(t) // listening again, on a new connection
	id := enqueue(t, pool, "acme", `{"type":"email","queue":"mail"}`)
	waitCreated(t, c, id)
}

// BenchmarkCommitToClaimable measures, for rows committed at a steady 200
// a second, the time from each commit to its node's claim by a worker
// long-polling claim-next: p50 and p99 in ms.
//
//	go test -run '^$' -bench CommitToClaimable -benchtime 1000x ./internal/intake/
func BenchmarkCommitToClaimable(b *testing.B) {
	s, pool := startTether(b, testserver.WallClock), database(b)
	// Its own consumer: Committed stays off, as nobody reads it here.
	c, err := New(Config{Pool: pool, Schema: schema, Creator: s.creator, PollInterval: time.Second})
	require.NoError(b, err)
	c.TestSignals.Listening.Init(b)
	require.NoError(b, c.Start(context.Background()))
	b.Cleanup(c.Stop)
	c.TestSignals.Listening.Wait(b)
	ctx := context.Background()
	n := b.N
	committed := make([]time.Time, n)
	latencies := make([]time.Duration, 0, n)
	var mu sync.Mutex // committed: written by the enqueuer, read by the claimer
	claimed := make(chan error, 1)
	go func() {
		for len(latencies) < n {
			node := s.claim(b, "acme", "bench", 10*time.Second)
			at := time.Now()
			if node == nil {
				claimed <- fmt.Errorf("no node within 10s after %d", len(latencies))
				return
			}
			i, _ := strconv.Atoi(node.Props["i"].(string))
			mu.Lock()
			latencies = append(latencies, at.Sub(committed[i]))
			mu.Unlock()
		}
		claimed <- nil
	}()
	b.ResetTimer()
	tick := time.NewTicker(5 * time.Millisecond) // the steady rate, not a wait for anything
	defer tick.Stop()
	for i := range n {
		<-tick.C
		tx, err := pool.Begin(ctx)
		require.NoError(b, err)
		_, err = tx.Exec(ctx, "SELECT tether.enqueue($1, $2)", "acme", fmt.Sprintf(`{"type":"job","queue":"bench","props":{"i":"%d"}}`, i))
		require.NoError(b, err)
		mu.Lock()
		require.NoError(b, tx.Commit(ctx))
		committed[i] = time.Now()
		mu.Unlock()
	}
	require.NoError(b, <-claimed)
	b.StopTimer()
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
}

// BenchmarkDrain measures how fast one consumer turns a backlog into
// nodes: b.N rows committed in one transaction, then timed from the
// consumer's start until every row's node is made (rows/s).
//
//	go test -run '^$' -bench Drain -benchtime 2000x ./internal/intake/
func BenchmarkDrain(b *testing.B) {
	s, pool := startTether(b, testserver.WallClock), database(b)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(b, err)
	_, err = tx.Exec(ctx, `SELECT tether.enqueue('acme', jsonb_build_object('type', 'job', 'queue', 'drain', 'props', jsonb_build_object('i', i))) FROM generate_series(1, $1) AS i`, b.N)
	require.NoError(b, err)
	require.NoError(b, tx.Commit(ctx))
	b.ResetTimer()
	start := time.Now()
	c := consume(b, pool, s.creator)
	for made := 0; made < b.N; {
		made += len(c.TestSignals.Committed.Wait(b).Created)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rows/s")
}
