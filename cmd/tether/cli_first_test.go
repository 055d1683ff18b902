package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tether-run/tether/client"
)

// TestCLITokenMintFindsDevSecret: beside a dev server (its data directory
// holds dev-secret) `token mint` needs no --secret.
func TestCLITokenMintFindsDevSecret(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dev-secret"), []byte(procSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.run("", []string{"TETHER_DATA_DIR=" + dir}, "token", "mint", "--sub", "dave", "--tenant", "acme", "--roles", "dispatcher")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	tok := strings.TrimSpace(r.stdout)
	if _, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return []byte(procSecret), nil }); err != nil {
		t.Fatalf("not signed with the dev secret: %v", err)
	}
	requireContains(t, e.ok(tok, "nodes", "create", "--type", "task", "--id", "by-dave"), "by dave")
	// No secret anywhere: the error says where it looked.
	r = e.run("", []string{"TETHER_DATA_DIR=" + t.TempDir()}, "token", "mint", "--sub", "x", "--tenant", "acme")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2: %s", r.code, r.stderr)
	}
	requireContains(t, r.stderr, "TETHER_JWT_SECRET", "dev-secret")
}

// TestCLIAPIKeys: token create prints a working key once, ls shows it without
// its secret, revoke ends it at once.
func TestCLIAPIKeys(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	key := strings.TrimSpace(e.ok(e.admin, "token", "create", "--sub", "ci", "--roles", "dispatcher", "--name", "CI runner"))
	requireContains(t, e.ok(key, "nodes", "create", "--type", "task", "--id", "by-ci"), "by ci")

	created := decode[struct{ ID, Token, Sub string }](t, e.ok(e.admin, "token", "create", "--sub", "tmp", "-o", "json"))
	if created.ID == "" || created.Token == "" || created.Sub != "tmp" {
		t.Fatalf("-o json: %+v", created)
	}
	ls := e.ok(e.admin, "token", "ls")
	requireContains(t, ls, "ID SUB ROLES NAME CREATED", "ci dispatcher CI runner", created.ID+" tmp worker -")
	if strings.Contains(ls, key) || strings.Contains(ls, created.Token) {
		t.Errorf("token ls shows a secret:\n%s", ls)
	}
	requireContains(t, e.ok(created.Token, "nodes", "ls"), "by-ci")
	requireContains(t, e.ok(e.admin, "token", "revoke", created.ID), "revoked "+created.ID)
	requireContains(t, e.fails(1, created.Token, "nodes", "ls").stderr, "401")
	// Only an admin manages keys; a bad role is a usage error.
	requireContains(t, e.fails(1, e.alice, "token", "ls").stderr, "403")
	requireContains(t, e.fails(2, e.admin, "token", "create", "--sub", "x", "--roles", "boss").stderr, "boss")
	requireContains(t, e.fails(2, e.admin, "token", "create").stderr, "--sub is required")
}

// TestCLIJSONErrors: with -o json a refused call prints the server's problem
// document on stderr, and a usage error one with code "usage".
func TestCLIJSONErrors(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	r := e.fails(1, e.alice, "nodes", "get", "nope", "-o", "json")
	p := decode[struct {
		Status int
		Code   string
		Detail string
	}](t, r.stderr)
	if p.Status != 404 || p.Code != "not_found" {
		t.Errorf("problem %+v from %q", p, r.stderr)
	}
	r = e.fails(2, e.alice, "nodes", "create", "-o", "json")
	u := decode[struct{ Code, Detail string }](t, r.stderr)
	if u.Code != "usage" || !strings.Contains(u.Detail, "--type") {
		t.Errorf("usage problem %+v from %q", u, r.stderr)
	}
	// Without -o json the same error is text.
	requireContains(t, e.fails(1, e.alice, "nodes", "get", "nope").stderr, "tether: ", "not_found")
	// -o id prints the id alone.
	if id := strings.TrimSpace(e.ok(e.head, "nodes", "create", "--type", "task", "--id", "just-the-id", "-o", "id")); id != "just-the-id" {
		t.Errorf("-o id printed %q", id)
	}
}

// TestWorkDefaultWorkerNamesAreUnique: two runners of one identity on one
// host, neither named, are two rows in GET /v1/workers (HOST-PID-SLOT).
func TestWorkDefaultWorkerNamesAreUnique(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "server", t.TempDir())
	hc := httpClient(t)
	e := &workEnv{srv: srv, hc: hc, disp: srv.as(hc, mint(t, "head", "dispatcher")), reader: srv.as(hc, mint(t, "auditor", "reader"))}
	a := e.startRunner(t, "twin", "--queue", "twins", "--", "true")
	b := e.startRunner(t, "twin", "--queue", "twins", "--", "true")
	var names []string
	workEventually(t, "two idle workers of twin", func() bool {
		res, err := e.reader.ListWorkersWithResponse(context.Background(), nil)
		if err != nil || res.JSON200 == nil {
			return false
		}
		names = names[:0]
		for _, w := range res.JSON200.Items {
			if w.By == "twin" && w.Status == client.WorkerStatusIdle {
				names = append(names, w.Worker)
			}
		}
		return len(names) == 2
	})
	for _, r := range []*runner{a, b} {
		suffix := fmt.Sprintf("-%d-1", r.cmd.Process.Pid)
		if !strings.HasSuffix(names[0], suffix) && !strings.HasSuffix(names[1], suffix) {
			t.Errorf("no worker named HOST%s in %v", suffix, names)
		}
	}
	a.stop(t)
	b.stop(t)
}

// TestCLIVocabularyAndStrictResult: the CLI speaks the API's words
// (--include-retired, --types/--labels everywhere, a positional duration for
// extend) and keeps the old ones working; complete refuses a --result that
// is not JSON unless --result-string says it is text; nodes create takes
// --backoff, tenant policy set --retry-initial/--retry-max.
func TestCLIVocabularyAndStrictResult(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	e.ok(e.head, "nodes", "create", "--type", "task", "--id", "v1", "--queue", "vq", "--label", "gpu")
	e.ok(e.head, "nodes", "create", "--type", "doc", "--id", "v2", "--queue", "vq")

	// queues claim --types/--labels, as tether work; --type still works.
	requireContains(t, e.ok(e.alice, "queues", "claim", "vq", "--types", "task", "--labels", "gpu"), "v1 claimed by alice: fence 1")
	requireContains(t, e.ok(e.alice, "queues", "claim", "vq", "--type", "doc"), "v2 claimed by alice: fence 1")

	// extend takes the duration as an argument, or --by; not both.
	requireContains(t, e.ok(e.alice, "extend", "v1", "30m", "--fence", "1"), "v1 extended by alice: fence 1")
	requireContains(t, e.ok(e.alice, "extend", "v1", "--by", "1m", "--fence", "1"), "v1 extended by alice")
	requireContains(t, e.fails(2, e.alice, "extend", "v1", "30m", "--by", "1m").stderr, "once")
	requireContains(t, e.fails(2, e.alice, "extend", "v1", "soon").stderr, `"soon" is not a duration`)
	requireContains(t, e.fails(2, e.alice, "extend", "v1").stderr, "positive")

	// complete: --result must be JSON; --result-string is text.
	r := e.fails(2, e.alice, "complete", "v1", "--fence", "1", "--result", "{bad json")
	requireContains(t, r.stderr, "--result is not valid JSON", "--result-string")
	if n := decode[struct{ Status string }](t, e.ok(e.head, "nodes", "get", "v1", "-o", "json")); n.Status != "running" {
		t.Errorf("a refused complete changed the node: %s", n.Status)
	}
	e.fails(2, e.alice, "complete", "v1", "--result", "1", "--result-string", "x")
	e.ok(e.alice, "complete", "v1", "--fence", "1", "--result-string", "{bad json")
	if n := decode[struct{ Result any }](t, e.ok(e.head, "nodes", "get", "v1", "-o", "json")); n.Result != "{bad json" {
		t.Errorf("result %#v, want the text", n.Result)
	}
	e.ok(e.alice, "complete", "v2", "--fence", "1", "--result", `"quoted text"`)

	// edges ls --include-retired (the API's include_retired); --retired still works.
	for _, flag := range []string{"--include-retired", "--retired"} {
		requireContains(t, e.ok(e.head, "edges", "ls", "v1", flag), "assigned")
	}
	if strings.Contains(e.ok(e.head, "edges", "ls", "v1"), "assigned") {
		t.Error("a retired edge is listed without --include-retired")
	}

	// nodes create --backoff, --max-attempts; tenant policy --retry-*.
	out := e.ok(e.head, "nodes", "create", "--type", "task", "--id", "b1", "--backoff", "30s,1h,3", "--max-attempts", "9", "-o", "json")
	b := decode[struct {
		MaxAttempts int64 `json:"max_attempts"`
		Backoff     struct {
			InitialMS int64   `json:"initial_ms"`
			MaxMS     int64   `json:"max_ms"`
			Factor    float64 `json:"factor"`
		}
	}](t, out)
	if b.MaxAttempts != 9 || b.Backoff.InitialMS != 30000 || b.Backoff.MaxMS != 3600000 || b.Backoff.Factor != 3 {
		t.Errorf("--backoff 30s,1h,3 --max-attempts 9: %s", out)
	}
	requireContains(t, e.ok(e.head, "nodes", "create", "--type", "task", "--id", "b2", "--backoff", "none", "-o", "json"), `"initial_ms": 0`)
	requireContains(t, e.fails(2, e.head, "nodes", "create", "--type", "task", "--backoff", "1h,1m").stderr, "MAX")
	requireContains(t, e.ok(e.admin, "tenant", "policy", "set", "--retry-initial", "2s", "--retry-max", "1m"), "retry_initial_ms:", "2s", "retry_max_ms:", "1m")
	requireContains(t, e.ok(e.head, "nodes", "create", "--type", "task", "--id", "b3", "-o", "json"), `"initial_ms": 2000`, `"max_ms": 60000`)
	requireContains(t, e.fails(1, e.admin, "tenant", "policy", "set", "--retry-initial", "2h").stderr, "retry_initial_ms", "60000 (1m)")
	requireContains(t, e.fails(1, e.admin, "tenant", "policy", "set", "--claim-ttl-max", "48h").stderr, "86400000 (24h)")
}

// TestVersion: tether version and --version name the build and its commit,
// as /health and the start log do.
func TestVersion(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	out := e.ok("", "version")
	requireMatch(t, out, `^tether \S+\n`)
	requireContains(t, out, "go: go1.")
	v := strings.Fields(out)[1]
	if got := strings.TrimSpace(e.ok("", "--version")); !strings.HasPrefix(got, "tether "+v+" (commit ") {
		t.Errorf("--version printed %q, want tether %s (commit ...)", got, v)
	}
	res, err := e.srv.as(httpClient(t), "").GetHealthWithResponse(context.Background())
	if err != nil || res.JSON200 == nil || res.JSON200.Version != v {
		t.Fatalf("/health %v %s, want version %s", err, res.Body, v)
	}
	// The commit make stamps (TestMain stamps testCommit) shows everywhere.
	requireContains(t, out, "commit: "+testCommit+" (modified)")
	if h := res.JSON200; h.Commit == nil || *h.Commit != testCommit || h.Modified == nil || !*h.Modified {
		t.Errorf("/health: %s, want commit %s, modified", res.Body, testCommit)
	}
	requireContains(t, e.srv.stderr.String(), "build.version="+v, "build.commit="+testCommit, "build.modified=true")
}

// TestWorkFailingCommandBacksOff: a command that fails at once does not burn
// every attempt in milliseconds: the failed node waits the default backoff
// (5 s, with jitter from half of it) before it runs again.
func TestWorkFailingCommandBacksOff(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "server", t.TempDir())
	hc := httpClient(t)
	e := &workEnv{srv: srv, hc: hc, disp: srv.as(hc, mint(t, "head", "dispatcher")), reader: srv.as(hc, mint(t, "auditor", "reader"))}
	r := e.startRunner(t, "flaky", "--queue", "flaky", "--", "false")
	e.create(t, client.NodeCreate{ID: ptr("flaky-1"), Queue: ptr("flaky")})
	var n client.Node
	workEventually(t, "the first run failed", func() bool {
		n = e.node(t, "flaky-1")
		return n.Attempts == 1 && n.Status == client.NodeStatusQueued
	})
	if n.RunAt == nil || time.Until(*n.RunAt) < 1500*time.Millisecond {
		t.Fatalf("run_at %v: the retry should wait about 2.5-5 s", n.RunAt)
	}
	if n.Backoff == nil || n.Backoff.InitialMS != 5000 || n.Backoff.Factor != 2 {
		t.Errorf("backoff %+v, want the default 5000 ms x2", n.Backoff)
	}
	r.stop(t)
}
