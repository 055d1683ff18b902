package main

// TestREADMEExamples runs every ```sh block of README.md, in order, as
// written, against a real `tether serve --dev`: the examples a newcomer pastes
// must work.
//
// The rules, the only liberties the test takes with the text:
//
//   - A block preceded by `<!-- readme-test: skip ... -->` is not run (the
//     block that starts the server these examples run against, the make
//     targets that run this very test).
//   - The blocks run in one bash, in the order of the README, in an empty
//     temp dir, with `set -e`: a block may use what an earlier one made (H,
//     task-1). An `export` line that sets TETHER_URL, TETHER_TOKEN or
//     TETHER_OPERATOR_TOKEN runs, and is followed by the values the dev server
//     printed (the README says: paste the lines it printed).
//   - `tether` is the binary TestMain built, and `go run ./cmd/tether` runs it.
//   - curl runs with --fail-with-body: any answer of 400 and above fails. A
//     curl stopped by its own --max-time (a stream) has passed.
//   - A command that runs until it is stopped (`tether work`, `tether serve`,
//     `--follow`, `--watch`) runs for a few seconds (5 for work, 2 for the
//     rest) and is stopped with SIGTERM; it passes unless it exited non-zero.
//   - A fixed loopback port in the ephemeral range (`--addr 127.0.0.1:36726`)
//     is replaced by a free one (withFreePorts): other tests of this run
//     listen on ports picked from that range.
//
// After the script, the test checks what the examples claim to have done.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
)

// readmeBlock is one ```sh block of the README.
type readmeBlock struct {
	line int // where its first line is (1-based)
	text string
}

var readmeSkip = regexp.MustCompile(`^<!--\s*readme-test:\s*skip\b`)

// readmeShellBlocks returns the README's ```sh blocks, without the skipped.
func readmeShellBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("error opening the README: %v", err)
	}
	defer f.Close()
	var blocks []readmeBlock
	var cur *readmeBlock
	skipNext := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(l) == "```":
			if !skipNext {
				blocks = append(blocks, *cur)
			}
			cur, skipNext = nil, false
		case cur != nil:
			cur.text += l + "\n"
		case strings.HasPrefix(l, "```"):
			if strings.TrimSpace(l) == "```sh" {
				cur = &readmeBlock{line: n + 1}
			}
		case readmeSkip.MatchString(l):
			skipNext = true
		case strings.TrimSpace(l) != "":
			skipNext = false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("error reading the README: %v", err)
	}
	return blocks
}

var readmeExportLine = regexp.MustCompile(`^\s*export .*\bTETHER_(URL|TOKEN|OPERATOR_TOKEN)=`)

// readmePrelude sets up the shell the blocks run in (see the file comment).
const readmePrelude = `set -euo pipefail
__readme_env() { export TETHER_URL="$README_URL" TETHER_TOKEN="$README_TOKEN" TETHER_OPERATOR_TOKEN="$README_OPERATOR_TOKEN"; }
__readme_env
curl() {
  local rc=0
  command curl --fail-with-body --show-error "$@" || rc=$?
  echo
  if [ "$rc" = 28 ] && [[ " $* " == *" --max-time "* ]]; then return 0; fi
  return "$rc"
}
tether() {
  local rc=0
  local secs=2
  case " $* " in
  " work "*) secs=5 ;; # time to claim and run a node on a busy machine
  esac
  case " $* " in
  " work "* | " serve "* | *" --follow "* | *" --watch "*)
    timeout -s TERM -k 10 "$secs" "$README_BIN" "$@" || rc=$?
    if [ "$rc" = 124 ]; then rc=0; fi
    return "$rc" ;;
  esac
  "$README_BIN" "$@"
}
go() {
  if [ "${1:-}" = run ] && [ "${2:-}" = ./cmd/tether ]; then shift 2; tether "$@"; return; fi
  echo "readme test: unexpected go $*" >&2; return 1
}
`

// readmeScript is the bash script that runs blocks.
func readmeScript(blocks []readmeBlock) string {
	var b strings.Builder
	b.WriteString(readmePrelude)
	for _, bl := range blocks {
		fmt.Fprintf(&b, "echo '== README.md line %d' >&2\n", bl.line)
		for l := range strings.SplitAfterSeq(bl.text, "\n") {
			b.WriteString(l)
			if readmeExportLine.MatchString(l) && !strings.HasSuffix(strings.TrimRight(l, "\n"), "\\") {
				b.WriteString("__readme_env\n")
			}
		}
	}
	return b.String()
}

func TestREADMEExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "timeout", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's examples need %s (curl 7.82 or later, for --json): %v", tool, err)
		}
	}
	blocks := readmeShellBlocks(t, filepath.Join("..", "..", "README.md"))
	if len(blocks) < 8 {
		t.Fatalf("found %d ```sh blocks in README.md; the extraction is broken", len(blocks))
	}
	dir := t.TempDir()
	work := filepath.Join(dir, "cwd") // where the blocks run; the server keeps ./data in it, as `go run ./cmd/tether serve --dev` does
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	srv := launch(t, "dev", addr, append(baseEnv(), "TETHER_DATA_DIR="+filepath.Join(work, "data"), "TETHER_ADDR="+addr), "serve", "--dev")
	srv.waitReady()
	tok := devToken(t, srv)
	op := regexp.MustCompile(`export TETHER_OPERATOR_TOKEN=(\S+)`).FindStringSubmatch(srv.stdout.String())
	if op == nil {
		t.Fatalf("the dev banner prints no operator token:\n%s", srv.stdout.String())
	}
	script := filepath.Join(dir, "readme.sh")
	if err := os.WriteFile(script, []byte(withFreePorts(t, readmeScript(blocks))), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-x", script)
	cmd.Dir = work
	cmd.Env = append(baseEnv(), "README_URL="+srv.url, "README_TOKEN="+tok, "README_OPERATOR_TOKEN="+op[1], "README_BIN="+tetherBin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's examples failed (%v); the last block started is the one at fault:\n%s", err, out)
	}
	t.Logf("README examples:\n%s", out)

	// What the examples say they did.
	api := srv.as(httpClient(t), tok)
	want := map[string]client.NodeStatus{"task-1": client.NodeStatusDone, "task-2": client.NodeStatusQueued, "task-3": client.NodeStatusDone, "hello": client.NodeStatusDone}
	for id, status := range want {
		res, err := api.GetNodeWithResponse(context.Background(), id)
		if err != nil || res.JSON200 == nil {
			t.Errorf("GET %s: %v %s", id, err, res.Body)
			continue
		}
		if res.JSON200.Status != status {
			t.Errorf("%s is %s after the README's examples, want %s", id, res.JSON200.Status, status)
		}
	}
}
