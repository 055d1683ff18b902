package main

// Tests of the client commands: the built binary (TestMain) against a real
// server process, as people and scripts use them.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// cliEnv is one server and the tokens of the identities the tests act as.
type cliEnv struct {
	t                       *testing.T
	srv                     *proc
	admin, head, alice, bob string
}

func startCLI(t *testing.T) *cliEnv {
	t.Helper()
	return &cliEnv{
		t: t, srv: startServer(t, "server", t.TempDir()),
		admin: mint(t, "root", "admin"), head: mint(t, "head", "dispatcher"),
		alice: mint(t, "alice"), bob: mint(t, "bob"),
	}
}

// cliResult is how one run of the binary ended.
type cliResult struct {
	stdout, stderr string
	code           int
}

// run runs tether args against the server as tok, with extraEnv.
func (e *cliEnv) run(tok string, extraEnv []string, args ...string) cliResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tetherBin, args...)
	cmd.Env = append(append(baseEnv(), "TETHER_URL="+e.srv.url, "TETHER_TOKEN="+tok), extraEnv...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		e.t.Fatalf("tether %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// ok runs tether args as tok, requires exit 0 and returns stdout.
func (e *cliEnv) ok(tok string, args ...string) string {
	e.t.Helper()
	r := e.run(tok, nil, args...)
	if r.code != 0 {
		e.t.Fatalf("tether %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs tether args as tok and requires exit code want.
func (e *cliEnv) fails(want int, tok string, args ...string) cliResult {
	e.t.Helper()
	r := e.run(tok, nil, args...)
	if r.code != want {
		e.t.Fatalf("tether %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

// row is the fields of the first line of a table whose first field is key.
func row(t *testing.T, table, key string) []string {
	t.Helper()
	for line := range strings.Lines(table) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == key {
			return f
		}
	}
	t.Fatalf("no row %q in:\n%s", key, table)
	return nil
}

func requireMatch(t *testing.T, s, pattern string) {
	t.Helper()
	if !regexp.MustCompile(pattern).MatchString(s) {
		t.Errorf("no match for %s in:\n%s", pattern, s)
	}
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, s)
	}
	return v
}

// requireContains checks that s has every one of wants, comparing runs of
// blanks as one space so that the checks do not depend on column widths.
func requireContains(t *testing.T, s string, wants ...string) {
	t.Helper()
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, w := range wants {
		if !strings.Contains(squash(s), squash(w)) {
			t.Errorf("missing %q in:\n%s", w, s)
		}
	}
}

func TestCLIWorkLifecycle(t *testing.T) {
	t.Parallel()
	e := startCLI(t)

	out := e.ok(e.head, "nodes", "create", "--type", "task", "--id", "t1", "--queue", "default",
		"--title", "Add rate limits", "--label", "api", "--priority", "3", "--props", `{"repo":"tether"}`)
	requireContains(t, out, "t1", "queued", "Add rate limits")

	table := e.ok(e.head, "nodes", "ls")
	row(t, table, "ID") // a header
	if got := row(t, table, "t1"); got[1] != "task" || got[2] != "queued" || got[4] != "default" || got[5] != "3" {
		t.Errorf("nodes ls row: %v", got)
	}
	list := decode[struct{ Items []struct{ ID, Status string } }](t, e.ok(e.head, "nodes", "ls", "-o", "json"))
	if len(list.Items) != 1 || list.Items[0].ID != "t1" || list.Items[0].Status != "queued" {
		t.Errorf("nodes ls -o json: %+v", list)
	}

	claim := decode[struct{ Lease struct{ Fence int64 } }](t, e.ok(e.alice, "claim", "t1", "--ttl", "1m", "-o", "json"))
	if claim.Lease.Fence != 1 {
		t.Fatalf("fence %d", claim.Lease.Fence)
	}
	requireContains(t, e.ok(e.alice, "renew", "t1", "--fence", "1"), "t1 renewed by alice: fence 1, expires in 1m")
	requireContains(t, e.ok(e.alice, "complete", "t1", "--fence", "1", "--result", `{"pr":42}`, "--usage", "tokens=1200"), "t1 done")

	history := e.ok(e.head, "history", "t1")
	if got := row(t, history, "1"); got[1] != "alice" || got[3] != "done" {
		t.Errorf("history row: %v\n%s", got, history)
	}
	edges := decode[struct {
		Items []struct {
			To        string
			Props     map[string]any
			RetiredAt *time.Time `json:"retired_at"`
		}
	}](t, e.ok(e.head, "history", "t1", "-o", "json"))
	if len(edges.Items) != 1 || edges.Items[0].To != "identity:alice" || edges.Items[0].Props["outcome"] != "done" || edges.Items[0].RetiredAt == nil {
		t.Errorf("history -o json: %+v", edges)
	}
	requireContains(t, e.ok(e.head, "nodes", "get", "t1"), "status:", "done", `{"pr":42}`, "tokens=1200")
}

func TestCLIConflictNamesTheHolder(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	e.ok(e.head, "nodes", "create", "--type", "task", "--id", "t1", "--queue", "default")
	e.ok(e.alice, "claim", "t1", "--ttl", "10m")

	r := e.fails(1, e.bob, "claim", "t1")
	requireContains(t, r.stderr, "409 conflict", "holder: alice")
	requireMatch(t, r.stderr, `expires_at: +20\d\d-\d\d-\d\dT[0-9:.]+Z \(in (9m\d+s|10m)\)`)
	if r.stdout != "" {
		t.Errorf("stdout: %q", r.stdout)
	}
	r = e.fails(1, e.alice, "renew", "t1", "--fence", "9")
	requireContains(t, r.stderr, "409 lease_lost", "holder: alice")
	r = e.fails(1, e.alice, "nodes", "get", "nope")
	requireContains(t, r.stderr, "404 not_found")
}

func TestCLIUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	e := &cliEnv{t: t, srv: &proc{url: "http://127.0.0.1:1"}} // never called
	for _, args := range [][]string{
		{"bogus"}, {"nodes", "bogus"}, {"nodes", "create"}, {"nodes", "ls", "--nope"},
		{"claim"}, {"claim", "a", "b"}, {"nodes", "ls", "-o", "yaml"}, {"fail", "t1"},
		{"nodes", "patch", "t1"}, {"nodes", "create", "--type", "task", "--props", "[1]"},
		{"token", "mint", "--sub", "a", "--tenant", "Not-A-Tenant", "--secret", "s"},
	} {
		r := e.fails(2, "", args...)
		if !strings.HasPrefix(r.stderr, "tether: ") {
			t.Errorf("tether %v: stderr %q", args, r.stderr)
		}
	}
}

func TestCLITokenMint(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	env := []string{"TETHER_JWT_SECRET=" + procSecret + ",an-older-secret"}

	r := e.run("", env, "token", "mint", "--sub", "carol", "--tenant", "acme", "--roles", "dispatcher", "--ttl", "1h")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	tok := strings.TrimSpace(r.stdout)
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return []byte(procSecret), nil }); err != nil {
		t.Fatalf("not signed with the first secret: %v", err)
	}
	if claims["sub"] != "carol" || claims["tid"] != "acme" {
		t.Errorf("claims %v", claims)
	}
	// The server accepts it, with the dispatcher's rights.
	requireContains(t, e.ok(tok, "nodes", "create", "--type", "task", "--id", "by-carol"), "created:", "by carol")

	r = e.run("", nil, "token", "mint", "--sub", "mallory", "--tenant", "acme", "--secret", "not-the-secret", "-o", "json")
	minted := decode[struct{ Token, Sub, Tid string }](t, r.stdout)
	if minted.Sub != "mallory" || minted.Tid != "acme" {
		t.Errorf("-o json: %+v", minted)
	}
	requireContains(t, e.fails(1, minted.Token, "nodes", "ls").stderr, "401 unauthorized")
	requireContains(t, e.fails(2, "", "token", "mint", "--sub", "x", "--tenant", "acme").stderr, "TETHER_JWT_SECRET")
}

func TestCLITenantPolicy(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	e.ok(e.admin, "tenant", "policy", "set", "--claim-ttl-default", "1m", "--max-leases-per-identity", "3")

	table := e.ok(e.admin, "tenant", "policy", "get")
	requireContains(t, strings.Join(row(t, table, "tenant:"), " "), "acme")
	requireContains(t, strings.Join(row(t, table, "claim_ttl_default_ms:"), " "), "60000 (1m)")
	requireContains(t, strings.Join(row(t, table, "max_leases_per_identity:"), " "), "3")

	set := decode[map[string]float64](t, e.ok(e.admin, "tenant", "policy", "set", "--reset", "claim_ttl_default_ms", "-o", "json"))
	if set["claim_ttl_default_ms"] != 300000 {
		t.Errorf("set --reset -o json: %v", set)
	}
	got := decode[struct {
		ID     string
		Policy map[string]float64
	}](t, e.ok(e.admin, "tenant", "policy", "get", "-o", "json"))
	if got.ID != "acme" || got.Policy["claim_ttl_default_ms"] != 300000 || got.Policy["max_leases_per_identity"] != 3 {
		t.Errorf("after --reset: %+v", got)
	}
	requireContains(t, e.fails(1, e.alice, "tenant", "policy", "set", "--max-attempts-default", "2").stderr, "403 forbidden")
}

func TestCLIQueuesAndLeases(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	for _, id := range []string{"a", "b", "c"} {
		e.ok(e.head, "nodes", "create", "--type", "task", "--id", id, "--queue", "q1")
	}
	e.ok(e.head, "nodes", "create", "--type", "task", "--id", "d", "--queue", "q2", "--priority", "5")

	requireContains(t, e.ok(e.alice, "queues", "claim", "q1", "--ttl", "2m"), "a claimed by alice: fence 1")
	table := e.ok(e.head, "queues", "ls")
	// QUEUE PAUSED READY QUEUED RUNNING DONE FAILED DEAD CANCELLED MAX_RUNNING OLDEST_READY
	if got := row(t, table, "q1"); strings.Join(got[1:9], " ") != "no 2 2 1 0 0 0 0" {
		t.Errorf("q1: %v\n%s", got, table)
	}
	if got := row(t, table, "q2"); strings.Join(got[1:5], " ") != "no 1 1 0" {
		t.Errorf("q2: %v\n%s", got, table)
	}
	queues := decode[struct {
		Items []struct {
			Queue  string
			Counts map[string]int
		}
	}](t, e.ok(e.head, "queues", "ls", "-o", "json"))
	if len(queues.Items) != 2 || queues.Items[0].Counts["running"]+queues.Items[1].Counts["running"] != 1 {
		t.Errorf("queues ls -o json: %+v", queues)
	}
	// A page at a time: the first names the cursor of the next.
	first := e.ok(e.head, "queues", "ls", "--limit", "1")
	row(t, first, "q1")
	_, cursor, found := strings.Cut(first, "(more: --cursor ")
	if !found {
		t.Fatalf("queues ls --limit 1 names no next page:\n%s", first)
	}
	second := e.ok(e.head, "queues", "ls", "--limit", "1", "--cursor", strings.TrimSuffix(strings.TrimSpace(cursor), ")"))
	row(t, second, "q2")
	if strings.Contains(second, "(more:") {
		t.Errorf("queues ls after the last page:\n%s", second)
	}

	leases := e.ok(e.head, "leases")
	if got := row(t, leases, "a"); got[1] != "alice" || got[3] != "1" || got[4] != "2m" {
		t.Errorf("leases row: %v\n%s", got, leases)
	}

	e.ok(e.head, "queues", "pause", "q2")
	requireContains(t, strings.Join(row(t, e.ok(e.head, "queues", "ls"), "q2")[1:3], " "), "yes 0")
	r := e.run(e.bob, nil, "queues", "claim", "q2")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "nothing ready in queue q2") {
		t.Errorf("claim from a paused queue: %+v", r)
	}
	e.ok(e.head, "queues", "resume", "q2")
	requireContains(t, e.ok(e.bob, "queues", "claim", "q2"), "d claimed by bob")

	requireContains(t, e.ok(e.alice, "fail", "a", "--error", "flaky", "--retry-in", "1m"), "a failed: now queued (attempt 1 of 5), retry in 1m")
	requireContains(t, e.ok(e.bob, "release", "d"), "d released: queued")
	requireContains(t, e.ok(e.head, "leases"), "(nothing is running)")
}

func TestCLINodesAndEdges(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	e.ok(e.head, "nodes", "create", "--type", "task", "--id", "build", "--queue", "ci")
	out := e.ok(e.head, "nodes", "create", "--type", "task", "--id", "deploy", "--queue", "ci", "--depends-on", "build",
		"--label", "prod,ops", "--max-attempts", "2", "--delay", "1h", "--timeout", "30m")
	requireContains(t, out, "blocked by build", "prod, ops", "attempts: 0 of 2", "timeout: 30m")
	requireMatch(t, out, `run_at: +\S+ \(in (59m\d+s|1h)\)`)

	e.ok(e.head, "edges", "add", "deploy", "relates_to", "build", "--props", `{"why":"same repo"}`)
	edges := e.ok(e.head, "edges", "ls", "deploy", "--dir", "out")
	requireContains(t, strings.Join(row(t, edges, "deploy"), " "), "deploy")
	requireContains(t, edges, "depends_on", "relates_to", `{"why":"same repo"}`)
	e.ok(e.head, "edges", "rm", "deploy", "relates_to", "build")
	if strings.Contains(e.ok(e.head, "edges", "ls", "deploy"), "relates_to") {
		t.Error("a retired edge is listed without --retired")
	}
	requireContains(t, e.ok(e.head, "edges", "ls", "deploy", "--retired"), "relates_to")

	out = e.ok(e.head, "nodes", "patch", "deploy", "--title", "Deploy", "--priority", "7", "--clear", "labels", "--if-match", "1")
	requireContains(t, out, "title: Deploy", "priority: 7")
	requireContains(t, e.fails(1, e.head, "nodes", "patch", "deploy", "--title", "x", "--if-match", "1").stderr,
		"412 precondition_failed", "version:")
	requireContains(t, e.ok(e.head, "nodes", "rm", "deploy"), "deleted deploy")
	requireContains(t, e.fails(1, e.head, "nodes", "get", "deploy").stderr, "404 not_found")
}

// TestCLIFollowAndWatch: events --follow prints an event as soon as it
// commits, and leases --watch draws a first frame at once.
func TestCLIFollowAndWatch(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	follow := exec.CommandContext(ctx, tetherBin, "events", "--follow", "-o", "json")
	follow.Env = append(baseEnv(), "TETHER_URL="+e.srv.url, "TETHER_TOKEN="+e.head)
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = follow.Process.Kill(); _ = follow.Wait() }()

	e.ok(e.head, "nodes", "create", "--type", "task", "--id", "live-1", "--queue", "default")
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatalf("no event: %v", lines.Err())
	}
	ev := decode[struct {
		Seq    int64
		Type   string
		NodeID string `json:"node_id"`
	}](t, lines.Text())
	if ev.Type != "created" || ev.NodeID != "live-1" || ev.Seq < 1 {
		t.Errorf("event %+v", ev)
	}
	// A later event arrives while the long poll waits.
	e.ok(e.alice, "claim", "live-1")
	for lines.Scan() && !strings.Contains(lines.Text(), `"claimed"`) {
	}
	if lines.Err() != nil || !strings.Contains(lines.Text(), `"live-1"`) {
		t.Errorf("no claimed event: %q %v", lines.Text(), lines.Err())
	}

	watch := exec.CommandContext(ctx, tetherBin, "leases", "--watch")
	watch.Env = follow.Env
	out, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Process.Kill(); _ = watch.Wait() }()
	frame := bufio.NewScanner(out)
	for frame.Scan() && !strings.HasPrefix(frame.Text(), "live-1 ") {
	}
	requireContains(t, frame.Text(), "alice")
}

// TestCLIRefusesDotSegmentIDs: "." and ".." are no node's id. Once, the
// client resolved them as dot segments: `events --node ..` printed the
// tenant's whole feed, and `nodes get .` the node "events".
func TestCLIRefusesDotSegmentIDs(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	e.ok(e.head, "nodes", "create", "--type", "task", "--id", "events", "--queue", "ci")
	for _, id := range []string{".", ".."} {
		requireContains(t, e.fails(1, e.head, "nodes", "create", "--type", "task", "--id", id).stderr, "400 bad_request")
		requireContains(t, e.fails(1, e.head, "nodes", "get", id).stderr, "400 bad_request")
		requireContains(t, e.fails(1, e.head, "events", "--node", id).stderr, "400 bad_request")
	}
}
