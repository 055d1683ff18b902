package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestCLIWorkersShowTheAPIsState: tether workers prints the state the API
// and the dashboard show; a runner that stopped cleanly is offline.
func TestCLIWorkersShowTheAPIsState(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	beat := func(body string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.srv.url+"/v1/workers/heartbeat", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.alice)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("heartbeat %s: %d", body, res.StatusCode)
		}
	}
	beat(`{"worker":"host-1-1","status":"idle"}`)
	beat(`{"worker":"host-2-1","status":"idle"}`)
	beat(`{"worker":"host-2-1","status":"offline"}`)

	table := e.ok(e.head, "workers")
	if f := row(t, table, "alice"); len(f) < 3 {
		t.Fatalf("short row in:\n%s", table)
	}
	states := map[string]string{}
	for line := range strings.Lines(table) {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "alice" {
			states[f[1]] = f[2]
		}
	}
	if states["host-1-1"] != "idle" || states["host-2-1"] != "offline" {
		t.Fatalf("states %v in:\n%s", states, table)
	}
	requireContains(t, e.ok(e.head, "workers", "-o", "json"), `"state": "offline"`)
}
