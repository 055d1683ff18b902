package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// TestCLITokenMintFromAnyDirectory: with TETHER_SECRET_FILE (the line serve
// --dev prints) `token mint` signs with the dev secret from any directory,
// and a file that is missing or empty is an error, not a fallback.
func TestCLITokenMintFromAnyDirectory(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	file := filepath.Join(t.TempDir(), "dev-secret")
	if err := os.WriteFile(file, []byte(procSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// TETHER_DATA_DIR points at an empty directory: the file alone decides.
	env := []string{"TETHER_SECRET_FILE=" + file, "TETHER_DATA_DIR=" + t.TempDir()}
	r := e.run("", env, "token", "mint", "--sub", "erin", "--tenant", "acme", "--roles", "dispatcher")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	tok := strings.TrimSpace(r.stdout)
	if _, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return []byte(procSecret), nil }); err != nil {
		t.Fatalf("not signed with the secret in TETHER_SECRET_FILE: %v", err)
	}
	requireContains(t, e.ok(tok, "nodes", "create", "--type", "task", "--id", "by-erin"), "by erin")

	for name, path := range map[string]string{"missing": filepath.Join(t.TempDir(), "nope"), "empty": filepath.Join(t.TempDir(), "empty")} {
		if name == "empty" {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r := e.run("", []string{"TETHER_SECRET_FILE=" + path}, "token", "mint", "--sub", "x", "--tenant", "acme")
		if r.code != 2 || r.stdout != "" {
			t.Fatalf("%s file: exit %d, stdout %q, want 2 and nothing", name, r.code, r.stdout)
		}
		requireContains(t, r.stderr, "TETHER_SECRET_FILE")
	}
}

// TestCLIEmptyTokenIsAnError: `export TETHER_TOKEN=$(cmd)` whose cmd failed
// leaves TETHER_TOKEN set and empty; every command that would send it says
// so and exits 2 instead of calling without a token.
func TestCLIEmptyTokenIsAnError(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	for _, args := range [][]string{
		{"nodes", "ls"},
		{"inbox"},
		{"blob", "get", strings.Repeat("0", 64)},
		{"work", "--queue", "q", "--", "true"},
	} {
		r := e.run("", nil, args...) // TETHER_TOKEN= (set, empty)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("tether %s: exit %d, stdout %q; want 2 and nothing", strings.Join(args, " "), r.code, r.stdout)
		}
		requireContains(t, r.stderr, "TETHER_TOKEN is empty")
	}
	r := e.run("", []string{"TETHER_OPERATOR_TOKEN= "}, "backup", "-f", filepath.Join(t.TempDir(), "b"))
	if r.code != 2 {
		t.Errorf("backup: exit %d, want 2", r.code)
	}
	requireContains(t, r.stderr, "TETHER_OPERATOR_TOKEN is empty")
	// --token wins over an empty variable.
	requireContains(t, e.ok("", "nodes", "ls", "--token", e.head), "ID")
}

// TestCLIVersion: the version and the commit, as text and as JSON.
func TestCLIVersion(t *testing.T) {
	t.Parallel()
	e := &cliEnv{t: t, srv: &proc{}}
	out := e.ok("", "version")
	requireMatch(t, out, `(?m)^tether \S+\ncommit: \S+.*\ngo: go1\.`)
	v := decode[versionJSON](t, e.ok("", "version", "-o", "json"))
	if v.Version == "" || !strings.HasPrefix(v.GoVersion, "go1.") {
		t.Fatalf("version -o json: %+v", v)
	}
	if id := strings.TrimSpace(e.ok("", "version", "-o", "id")); id != v.Version {
		t.Errorf("version -o id printed %q, want %q", id, v.Version)
	}
	e.fails(2, "", "version", "-o", "yaml")
	if got := strings.TrimSpace(e.ok("", "--version")); !strings.HasPrefix(got, "tether "+v.Version+" (commit ") {
		t.Errorf("--version printed %q", got)
	}
}

// TestMCPServerNamesTheBuild: tether mcp tells its client the version and
// commit that tether version prints.
func TestMCPServerNamesTheBuild(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	cs, _ := mcpSession(t, e.srv, e.alice)
	v := decode[versionJSON](t, e.ok("", "version", "-o", "json"))
	got := cs.InitializeResult().ServerInfo.Version
	if !strings.HasPrefix(got, v.Version+" (commit ") {
		t.Errorf("the MCP server says version %q; tether version says %+v", got, v)
	}
}

// versionJSON is what tether version -o json prints (the fields these tests
// read).
type versionJSON struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go"`
}
