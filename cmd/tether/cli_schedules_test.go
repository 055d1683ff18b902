package main

import (
	"strings"
	"testing"
	"time"
)

func TestCLISchedules(t *testing.T) {
	t.Parallel()
	e := startCLI(t)

	out := e.ok(e.head, "schedule", "create", "--id", "nightly", "--cron", "30 2 * * *", "--timezone", "Europe/Berlin",
		"--type", "report", "--queue", "default", "--chain", `[{"type": "publish", "queue": "default"}]`, "--backoff", "1m,10m")
	requireContains(t, out, "id: nightly", "when: 30 2 * * * (Europe/Berlin)", "state: enabled", "backoff: 1m, 10m", "overlap: skip")
	if n := strings.Count(out, "T"); n < 5 {
		t.Errorf("five next fires expected:\n%s", out)
	}
	requireContains(t, row(t, e.ok(e.head, "schedule", "ls"), "nightly")[1], "30")

	// Trigger runs it now: the run's two nodes, the second after the first.
	requireContains(t, e.ok(e.head, "schedule", "trigger", "nightly"), "run 1 of nightly:", " -> ")
	r := e.fails(1, e.head, "schedule", "trigger", "nightly")
	requireContains(t, r.stderr, "409 conflict", "not over")
	runs := e.ok(e.head, "schedule", "runs", "nightly")
	if got := row(t, runs, "1"); got[1] != "queued" || got[2] != "manual" {
		t.Errorf("runs row: %v\n%s", got, runs)
	}
	list := decode[struct {
		Items []struct {
			Seq   int64
			Nodes []string
		}
	}](t, e.ok(e.head, "schedule", "runs", "nightly", "-o", "json"))
	if len(list.Items) != 1 || len(list.Items[0].Nodes) != 2 {
		t.Fatalf("runs -o json: %+v", list)
	}

	// Pause with a note, resume, update, delete.
	requireContains(t, e.ok(e.head, "schedule", "pause", "nightly", "--note", "upstream down"), "paused nightly")
	requireContains(t, e.ok(e.head, "schedule", "get", "nightly"), "state: paused by head", "note: upstream down", "next: -")
	requireContains(t, e.ok(e.head, "schedule", "resume", "nightly"), "resumed nightly, next fire")
	upd := e.ok(e.head, "schedule", "update", "nightly", "--cron", "@every 1h", "--overlap", "queue", "--template", `{"priority": 5}`, "--clear", "timezone")
	requireContains(t, upd, "when: @every 1h (UTC)", "overlap: queue", `"priority":5`, `"type":"report"`)

	// Bad input is the server's 400; bad flags are usage errors.
	r = e.fails(1, e.head, "schedule", "create", "--cron", "61 * * * *", "--type", "x")
	requireContains(t, r.stderr, "400 bad_request", "field: cron")
	r = e.fails(1, e.head, "schedule", "create", "--cron", "@hourly", "--type", "x", "--timezone", "Mars/Base")
	requireContains(t, r.stderr, "field: timezone")
	e.fails(2, e.head, "schedule", "create", "--cron", "@hourly")
	e.fails(2, e.head, "schedule", "create", "--cron", "@hourly", "--type", "x", "--backoff", "soon")
	e.fails(2, e.head, "schedule", "update", "nightly", "--clear", "template")
	e.fails(2, e.head, "schedule", "bogus")
	r = e.fails(1, e.alice, "schedule", "pause", "nightly")
	requireContains(t, r.stderr, "403 forbidden")

	requireContains(t, e.ok(e.head, "schedule", "delete", "nightly"), "deleted nightly")
	requireContains(t, e.fails(1, e.head, "schedule", "get", "nightly").stderr, "404 not_found")

	// A schedule on the real clock: @every 1s fires within about a second.
	e.ok(e.head, "schedule", "create", "--id", "tick", "--cron", "@every 1s", "--type", "tick", "--queue", "default", "--overlap", "allow")
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows := e.ok(e.head, "schedule", "runs", "tick")
		if strings.Contains(rows, "schedule") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fire of an @every 1s schedule within 10 s:\n%s", rows)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
