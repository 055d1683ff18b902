package main

import (
	"strings"
	"testing"
)

// TestCLILimits sets, lists and removes limits, start rates, budgets and a
// queue's flow settings with tether limits, and sees a limit hold a claim
// back.
func TestCLILimits(t *testing.T) {
	t.Parallel()
	e := startCLI(t)

	requireContains(t, e.ok(e.head, "limits", "set", "repo:*", "--max-running", "1"), "repo:*: max running 1, rate -")
	requireContains(t, e.ok(e.head, "limits", "set", "provider:openai", "--rate", "120/m", "--burst", "4"),
		"provider:openai: max running -, rate 2/s, burst 4")

	// Two nodes on one repository: the second waits for the first.
	e.ok(e.head, "nodes", "create", "--type", "fix", "--id", "fix-web", "--queue", "fixes", "--concurrency-key", "repo:acme/web")
	e.ok(e.head, "nodes", "create", "--type", "lint", "--id", "lint-web", "--queue", "fixes", "--concurrency-key", "repo:acme/web")
	requireContains(t, e.ok(e.head, "nodes", "get", "lint-web"), "concurrency_keys: repo:acme/web")
	requireContains(t, e.ok(e.alice, "queues", "claim", "fixes"), "fix-web")
	r := e.run(e.alice, nil, "queues", "claim", "fixes")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("a throttled claim prints nothing and exits 0: %+v", r)
	}
	requireContains(t, r.stderr, "nothing handed out from queue fixes", `concurrency_limited on key "repo:acme/web"`)

	list := e.ok(e.alice, "limits")
	requireContains(t, list, "KEY MAX_RUNNING RUNNING RATE")
	if got := row(t, list, "repo:*"); got[1] != "1" || got[2] != "1" {
		t.Errorf("repo:* row: %v\n%s", got, list)
	}
	requireContains(t, row(t, list, "provider:openai")[3], "2/s,")
	lim := decode[struct {
		Items []struct {
			Key     string
			Running int64
		}
	}](t, e.ok(e.alice, "limits", "ls", "-o", "json"))
	if len(lim.Items) != 2 {
		t.Fatalf("limits -o json: %+v", lim)
	}

	// Budgets.
	requireContains(t, e.ok(e.head, "limits", "budget", "set", "provider:openai", "--usage", "tokens", "--limit", "100000", "--window", "1h"),
		"provider:openai: 0 of 100000 tokens spent this 1h window")
	requireContains(t, strings.Join(row(t, e.ok(e.alice, "limits", "budgets"), "provider:openai")[1:4], " "), "tokens 0 100000")
	requireContains(t, e.ok(e.head, "limits", "budget", "rm", "provider:openai"), "removed the budget of provider:openai")
	requireContains(t, e.fails(1, e.head, "limits", "budget", "rm", "provider:openai").stderr, "404 not_found")

	// A queue's own settings.
	q := e.ok(e.head, "limits", "queue", "fixes", "--max-running-per-key", "2", "--rate", "5/s", "--burst", "10")
	requireContains(t, q, "max_running_per_key: 2", "fair: no", "rate: 5/s, burst 10")
	requireContains(t, e.ok(e.head, "limits", "queue", "fixes", "--no-rate"), "fair: no", "rate: -", "max_running_per_key: 2")
	// Fair share and aging are refused until claim-next indexes them.
	requireContains(t, e.fails(1, e.head, "limits", "queue", "fixes", "--fair").stderr, "400 bad_request", "field: fair")

	// Bad input: the server's 400 naming the field; bad flags are usage
	// errors; a worker may read but not write.
	requireContains(t, e.fails(1, e.head, "limits", "set", "k", "--max-running", "0").stderr, "400 bad_request", "field: max_running")
	requireContains(t, e.fails(1, e.head, "limits", "budget", "set", "k", "--usage", "tokens", "--limit", "-1", "--window", "1h").stderr,
		"400 bad_request", "field: limit")
	e.fails(2, e.head, "limits", "set", "k")
	e.fails(2, e.head, "limits", "set", "k", "--rate", "fast")
	e.fails(2, e.head, "limits", "set", "k", "--burst", "3")
	e.fails(2, e.head, "limits", "budget", "set", "k", "--usage", "tokens")
	e.fails(2, e.head, "limits", "queue", "fixes")
	requireContains(t, e.fails(1, e.alice, "limits", "set", "k", "--max-running", "1").stderr, "403 forbidden")

	// Removing the limit lets the second node start.
	requireContains(t, e.ok(e.head, "limits", "rm", "repo:*"), "removed the limit of repo:*")
	requireContains(t, e.ok(e.alice, "queues", "claim", "fixes"), "lint-web")
	requireContains(t, e.fails(1, e.head, "limits", "rm", "repo:*").stderr, "404 not_found")
}
