package main

// TestREADMECluster runs the README's cluster example as written: three etcd
// members (Debian's etcd-server, found on PATH), two Tether servers over
// them, one tenant's work through either, then one server killed with -9
// and the work going on through the other. It runs the block twice, killing
// each server once (the second time with the servers' roles swapped after
// the kill line). Without an etcd binary it skips; .ci/run installs one.
// The one liberty it takes with the text: each fixed loopback port of the
// block in the kernel's ephemeral range (the servers' 36801 and 36802) is
// replaced by a free one, the same everywhere it appears, since other tests
// of this run listen on ports picked from that range. The etcd members'
// ports (12379 to 32380, written as ${i}2379) are below it.

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/testskip"
)

const readmeClusterMarker = "TestREADMECluster runs this block"

// readmeClusterBlock is the ```sh block after the marker comment.
func readmeClusterBlock(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	marked, in := false, false
	var b strings.Builder
	for sc.Scan() {
		l := sc.Text()
		switch {
		case in && strings.TrimSpace(l) == "```":
			return b.String()
		case in:
			b.WriteString(l + "\n")
		case strings.Contains(l, readmeClusterMarker):
			marked = true
		case marked && strings.TrimSpace(l) == "```sh":
			in = true
		}
	}
	t.Fatalf("README.md has no ```sh block after a comment saying %q", readmeClusterMarker)
	return ""
}

func TestREADMECluster(t *testing.T) {
	testskip.Programs(t, "etcd") // Debian: apt-get install etcd-server; .ci/run installs it
	block := readmeClusterBlock(t)
	kill := "kill -9 $s1\n"
	i := strings.Index(block, kill)
	if i < 0 {
		t.Fatalf("the README's cluster block has no line %q", strings.TrimSpace(kill))
	}
	// The other way round: kill the second server and go on through the first.
	swapped := block[:i] + "kill -9 $s2\n" + strings.ReplaceAll(block[i+len(kill):], "127.0.0.1:36802", "127.0.0.1:36801")
	for _, c := range []struct{ name, script string }{{"kill server 1", block}, {"kill server 2", swapped}} {
		t.Run(c.name, func(t *testing.T) { runClusterBlock(t, withFreePorts(t, c.script)) })
	}
}

// runClusterBlock runs script with bash -e in an empty directory, tether
// being the binary TestMain built, and kills everything it started.
func runClusterBlock(t *testing.T, script string) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), "PATH="+filepath.Dir(tetherBin)+":"+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	// The servers and etcd members run in the background of the script's
	// process group: end them all.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	// and wait until they are gone, so that the next run finds the ports
	// free and no member of this cluster answering.
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(-cmd.Process.Pid, 0) == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("the processes the README's cluster block started did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", filepath.Base(l), b)
		}
		t.Fatalf("the README's cluster block failed: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{"job-1 claimed by alice: fence 1", "status:      running", "job-2 claimed by alice: fence 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("the output does not say %q:\n%s", want, got)
		}
	}
}
