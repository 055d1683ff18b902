package pgfailover

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// retryablePgx says whether a client may retry after err: the connection
// broke or could not be made, or the server was going away or not yet
// writable. A constraint violation or a syntax error is not retryable.
func retryablePgx(err error) bool {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return true // no answer from a server: the connection failed
	}
	switch {
	case len(pg.Code) == 5 && pg.Code[:2] == "08": // connection exception
		return true
	case pg.Code == "57P01", pg.Code == "57P02", pg.Code == "57P03": // shutdown, crash, starting
		return true
	case pg.Code == "25006": // read-only transaction: reached a standby
		return true
	}
	return false
}

// TestFailoverKeepsAcknowledgedWrites runs inserts over a pool on the
// formation's multi-host URL, kills the primary's node, and checks that the
// secondary is promoted, every acknowledged insert is on it, and every
// error was retryable and came during the failover.
func TestFailoverKeepsAcknowledgedWrites(t *testing.T) {
	f := Start(t, "workload")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	pool, err := pgxpool.New(ctx, f.URL())
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, "CREATE TABLE acks (id text PRIMARY KEY)")
	require.NoError(t, err)

	var ledger Ledger
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const workers = 4
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := strconv.Itoa(w) + "-" + strconv.Itoa(i)
				began := time.Now()
				cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := pool.Exec(cctx, "INSERT INTO acks (id) VALUES ($1)", id)
				ccancel()
				if err == nil {
					ledger.Ack(id, time.Now())
					continue
				}
				ledger.Fail(CallError{Began: began, Ended: time.Now(), Err: err.Error(), Retryable: retryablePgx(err)})
				time.Sleep(50 * time.Millisecond) // a client's back-off before it retries
			}
		})
	}
	waitAcks := func(since time.Time, n int) {
		t.Helper()
		for ledger.AckedSince(since) < n {
			select {
			case <-ctx.Done():
				t.Fatalf("only %d writes acknowledged since %v", ledger.AckedSince(since), since)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	began := time.Now()
	waitAcks(began, 200)

	killed := time.Now()
	require.NoError(t, f.KillNode("a"))
	primary, err := f.WaitPrimary(ctx, "a")
	require.NoError(t, err)
	promoted := time.Now()
	waitAcks(promoted, 200)
	close(stop)
	wg.Wait()

	served := ledger.Served(killed)
	t.Logf("primary a killed; %s promoted %.1fs later; writes acknowledged again %.1fs after the kill; %d writes acknowledged, %d errors",
		primary, promoted.Sub(killed).Seconds(), served.Sub(killed).Seconds(), len(ledger.Acked()), len(ledger.Errors()))

	// Every acknowledged write is on the new primary.
	acked := ledger.Acked()
	var found int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM acks WHERE id = ANY($1)", acked).Scan(&found))
	require.Equal(t, len(acked), found, "acknowledged writes missing after the failover")
	require.NoError(t, ledger.Check(killed, served, 6*time.Second))
}
