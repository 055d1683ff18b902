package main

// TestREADMEExamples runs every ```sh block of README.md, in order, as
// written, against a real `tether serve --dev`: the examples a newcomer pastes
// must work when followed in one shell.
//
// The rules, the only liberties the test takes with the text:
//
//   - A block preceded by `<!-- readme-test: skip ... -->` is not run (the
//     block that starts the server these examples run against, the make
//     targets that run this very test).
//   - The blocks run in one bash, in the order of the README, with `set -e`,
//     as one person's shell would: a block sees what every earlier one set
//     (H, exported variables, files), and nothing is put back between them.
//     The shell starts in an empty directory that is not the server's, with
//     no TETHER_* variable set.
//   - An `export` of a variable the dev server's banner prints (TETHER_URL,
//     TETHER_TOKEN, TETHER_SECRET_FILE, TETHER_OPERATOR_TOKEN) with a literal
//     value (the README's placeholder) is replaced by the banner's line: the
//     README says to paste them. An export of a command's output runs as
//     written.
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
	"github.com/tether-run/tether/internal/testskip"
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

// readmeExportLine is an export of one variable; a value that is not a
// command's output (no "$(") is a placeholder for what the banner printed.
var readmeExportLine = regexp.MustCompile(`^\s*export (TETHER_[A-Z_]+)=(\S*)`)

// readmeBannerExports are the `export NAME=value` lines the dev banner printed.
func readmeBannerExports(banner string) map[string]string {
	lines := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*export (TETHER_[A-Z_]+)=(\S+)$`).FindAllStringSubmatch(banner, -1) {
		lines[m[1]] = "export " + m[1] + "=" + m[2]
	}
	return lines
}

// readmePrelude sets up the shell the blocks run in (see the file comment).
const readmePrelude = `set -euo pipefail
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

// readmeScript is the bash script that runs blocks, with the placeholder
// export lines replaced by the banner's (see the file comment).
func readmeScript(t *testing.T, blocks []readmeBlock, banner map[string]string) string {
	var b strings.Builder
	b.WriteString(readmePrelude)
	pasted := map[string]bool{}
	for _, bl := range blocks {
		fmt.Fprintf(&b, "echo '== README.md line %d' >&2\n", bl.line)
		for l := range strings.SplitAfterSeq(bl.text, "\n") {
			if m := readmeExportLine.FindStringSubmatch(l); m != nil && !strings.Contains(m[2], "$(") && banner[m[1]] != "" {
				l = banner[m[1]] + "   # pasted from the banner\n"
				pasted[m[1]] = true
			}
			b.WriteString(l)
		}
	}
	for _, name := range []string{"TETHER_URL", "TETHER_TOKEN", "TETHER_SECRET_FILE"} {
		if !pasted[name] {
			t.Errorf("the README never has the reader paste the banner's export line for %s", name)
		}
	}
	return b.String()
}

func TestREADMEExamples(t *testing.T) {
	testskip.Programs(t, "bash", "curl", "timeout", "sha256sum")
	if err := curlHasJSON(); err != nil {
		testskip.Missing(t, "curl 7.82+", err.Error())
	}
	blocks := readmeShellBlocks(t, filepath.Join("..", "..", "README.md"))
	if len(blocks) < 8 {
		t.Fatalf("found %d ```sh blocks in README.md; the extraction is broken", len(blocks))
	}
	dir := t.TempDir()
	// The server keeps ./data in its own directory, as `go run ./cmd/tether
	// serve --dev` does in the clone; the reader's shell is elsewhere.
	serverDir, shellDir := filepath.Join(dir, "server"), filepath.Join(dir, "shell")
	for _, d := range []string{serverDir, shellDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	srv := launch(t, "dev", addr, append(baseEnv(), "TETHER_DATA_DIR="+filepath.Join(serverDir, "data"), "TETHER_ADDR="+addr), "serve", "--dev")
	srv.waitReady()
	tok := devToken(t, srv)
	banner := readmeBannerExports(srv.stdout.String())
	for _, name := range []string{"TETHER_URL", "TETHER_TOKEN", "TETHER_SECRET_FILE", "TETHER_OPERATOR_TOKEN"} {
		if banner[name] == "" {
			t.Fatalf("the dev banner prints no export line for %s:\n%s", name, srv.stdout.String())
		}
	}
	script := filepath.Join(dir, "readme.sh")
	// Free ports before the banner's lines go in: its own port is in the
	// ephemeral range too. One call, so an address gets one port everywhere.
	texts := make([]string, len(blocks))
	for i, bl := range blocks {
		texts[i] = bl.text
	}
	for i, text := range strings.Split(withFreePorts(t, strings.Join(texts, "\x00")), "\x00") {
		blocks[i].text = text
	}
	if err := os.WriteFile(script, []byte(readmeScript(t, blocks, banner)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-x", script)
	cmd.Dir = shellDir
	cmd.Env = append(baseEnv(), "README_BIN="+tetherBin)
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

// curlHasJSON is nil when curl knows --json (7.82 and later), which the
// README's examples use.
func curlHasJSON() error {
	out, err := exec.Command("curl", "--version").Output()
	if err != nil {
		return fmt.Errorf("curl --version: %v", err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(string(out), "curl %d.%d", &major, &minor); err != nil {
		return fmt.Errorf("cannot read curl's version from %q", strings.SplitN(string(out), "\n", 2)[0])
	}
	if major < 7 || major == 7 && minor < 82 {
		return fmt.Errorf("curl %d.%d has no --json", major, minor)
	}
	return nil
}
