package main

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/pgtest"
)

// TestServeOnPostgresConsumesTheIntake: `tether serve` on PostgreSQL makes
// the nodes applications enqueue in their own transactions, one per row,
// including a row enqueued while the server was down (killed with -9).
func TestServeOnPostgresConsumesTheIntake(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	serve := func(name string) *proc {
		p := launch(t, name, addr, serverEnv(filepath.Join(dir, name), addr,
			"TETHER_STORE=postgres", "TETHER_POSTGRES_URL="+url, "TETHER_POSTGRES_SHARDS=2", "TETHER_POSTGRES_LEASE_TTL_MS=1000"), "serve")
		p.waitReady()
		return p
	}
	enqueue := func(to string) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op once committed
		node := map[string]any{"type": "welcome", "queue": "mail", "props": map[string]any{"to": to}}
		if _, err := tx.Exec(ctx, "SELECT tether.enqueue($1, $2)", "acme", node); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(p *proc, want string) {
		t.Helper()
		wait := int64(10000)
		res, err := p.as(httpClient(t), mint(t, "w1")).ClaimNextWithResponse(ctx, "mail", client.ClaimNextJSONRequestBody{WaitMS: &wait})
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("claim-next: %v %s", err, res.Body)
		}
		if got := res.JSON200.Node.Props["to"]; got != want {
			t.Fatalf("claimed the node for %v, want %s", got, want)
		}
	}

	first := serve("first")
	enqueue("a@example.com")
	claim(first, "a@example.com")
	_ = first.cmd.Process.Kill()
	first.waitExit(10 * time.Second)

	enqueue("b@example.com") // nobody is consuming: the row waits
	second := serve("second")
	claim(second, "b@example.com")
	queue := "mail"
	res, err := second.as(httpClient(t), mint(t, "reader")).ListNodesWithResponse(ctx, &client.ListNodesParams{Queue: &queue})
	if err != nil || res.JSON200 == nil {
		t.Fatalf("list: %v %s", err, res.Body)
	}
	if n := len(res.JSON200.Items); n != 2 {
		t.Fatalf("%d nodes, want one per row: 2", n)
	}
}
