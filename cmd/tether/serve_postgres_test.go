package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tether-run/tether/internal/pgschema"
	"github.com/tether-run/tether/internal/pgtest"
)

// TestServePostgresSchemaVersion: with TETHER_POSTGRES_MIGRATE=refuse a
// server refuses a database whose schema is behind, naming both versions;
// with the default (auto) it migrates it and serves; a server started with
// another shard count than the cluster's is refused, naming both.
func TestServePostgresSchemaVersion(t *testing.T) {
	url := pgtest.Start(t).URL(t)
	env := func(addr string, extra ...string) []string {
		return serverEnv(t.TempDir(), addr, append([]string{
			"TETHER_STORE=postgres", "TETHER_POSTGRES_URL=" + url, "TETHER_POSTGRES_SHARDS=4", "TETHER_ADVERTISE_URL=http://" + addr,
		}, extra...)...)
	}

	addr := freeAddr(t)
	p := launch(t, "refusing", addr, env(addr, "TETHER_POSTGRES_MIGRATE=refuse"), "serve")
	if code := p.waitExit(refusalTimeout); code == 0 {
		t.Fatal("tether serve exited 0 on a schema behind it")
	}
	want := fmt.Sprintf("is at version 0, this server needs version %d", pgschema.Version())
	if !strings.Contains(p.stderr.String(), want) {
		t.Errorf("stderr does not name the versions (%q):\n%s", want, p.stderr.String())
	}

	addr = freeAddr(t)
	p = launch(t, "migrating", addr, env(addr), "serve")
	p.waitReady()

	addr = freeAddr(t)
	other := launch(t, "other count", addr, env(addr, "TETHER_POSTGRES_SHARDS=5"), "serve")
	if code := other.waitExit(refusalTimeout); code == 0 {
		t.Fatal("tether serve exited 0 with another shard count")
	}
	if s := other.stderr.String(); !strings.Contains(s, "has 4 shards") || !strings.Contains(s, "started with 5") {
		t.Errorf("stderr does not name both shard counts:\n%s", s)
	}
}
