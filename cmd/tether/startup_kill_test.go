package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
)

// startupKillsEnv multiplies how many kill points TestKill9DuringStartUp
// covers: each syscall's calls are taken this many times over, and this
// many times as many delays; for a machine with time.
const startupKillsEnv = "TETHER_STARTUP_KILLS"

// killedSyscalls are the calls a start makes its files with (ftruncate
// sizes a file Badger has just created) and removes or renames them with
// (Badger's close, the log's replayed segments).
var killedSyscalls = []string{"ftruncate", "unlinkat", "renameat"}

// A kill -9 at any point of a start never stops the next start, and loses
// no acknowledged write. Badger makes a file at every open and sizes it in
// a second step; a start killed in between used to leave an empty value
// log (or memtable) that made every later start exit.
//
// The kill points, each a start of its own on one data directory:
//   - each of a start's opens of Badger as it sizes the value log the open
//     made (strace delivers the SIGKILL as it enters that ftruncate), the
//     window the issue found;
//   - the entry to the n-th call of each of killedSyscalls, for n = 1, 2, ...
//     until a start reaches ready without making it: the instants between
//     Badger creating a file (memtables, tables) and sizing it, and those
//     of every removal and rename;
//   - delays from the process's start, spread over how long a start takes;
//   - the moment the process logs its rebuild done, before the reopen.
//
// Every other kill is preceded by a start that runs to ready, acknowledges
// writes and is killed then, so the next start has a log to replay (and
// opens Badger once more to flush it). The last start must be ready and
// hold every acknowledged write.
func TestKill9DuringStartUp(t *testing.T) {
	t.Parallel()
	times := 1
	if v := os.Getenv(startupKillsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a count", startupKillsEnv, v)
		}
		times = n
	}
	dir := t.TempDir()
	ctx := context.Background()
	hc := httpClient(t)
	tok := mint(t, "head", "dispatcher")
	var acknowledged []string
	write := func(p *proc, n int) {
		t.Helper()
		c := p.as(hc, tok)
		for range n {
			id := fmt.Sprintf("n%04d", len(acknowledged))
			r, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q")})
			if err != nil {
				t.Fatalf("create %s: %v", id, err)
			}
			if r.StatusCode() != http.StatusCreated {
				t.Fatalf("create %s: %d %s", id, r.StatusCode(), r.Body)
			}
			acknowledged = append(acknowledged, id)
		}
	}
	starts, removed := 0, 0
	// ended checks that a start ended by SIGKILL, not by an error of its own.
	ended := func(p *proc) {
		t.Helper()
		starts++
		<-p.exited
		if !killed(p.cmd.ProcessState) {
			t.Fatalf("%s: tether ended by itself (%v), not by the kill:\n%s", p.name, p.cmd.ProcessState, p.stderr.String())
		}
		removed += strings.Count(p.stderr.String(), "removed an empty badger file")
	}
	withLog := func(name string) {
		t.Helper()
		p := startServer(t, name+", ready", dir)
		write(p, 3)
		p.kill9()
		ended(p)
	}

	began := time.Now()
	first := startServer(t, "before the loop", dir)
	startup := time.Since(began)
	write(first, 20)
	first.kill9()
	ended(first)

	kills := 0
	traced := strace(t)
	// Each open of Badger makes the next value log: kill each open of a
	// start (the first, the one that flushes a replayed log, the one after
	// the rebuild) as it sizes its value log, on a log to replay and not.
	for _, replay := range []bool{true, false} {
		for open := 1; traced && open <= 3; open++ {
			name := fmt.Sprintf("killed sizing the value log of open %d (log to replay: %v)", open, replay)
			if replay {
				withLog(name)
			}
			p := launchTraced(t, name, dir, "ftruncate", 1, vlogPath(t, dir, open))
			kills++
			if p.readyOrGone() {
				p.kill9()
				ended(p.proc)
				break // this start opened Badger fewer times
			}
			ended(p.proc)
		}
	}
	for _, call := range killedSyscalls {
		if !traced {
			break
		}
		for n := 1; n <= 40*times; n++ {
			name := fmt.Sprintf("killed entering %s #%d", call, n)
			if kills%2 == 0 {
				withLog(name)
			}
			p := launchTraced(t, name, dir, call, n, "")
			kills++
			if p.readyOrGone() {
				p.kill9()
				ended(p.proc)
				break // this start made fewer such calls: the series is done
			}
			ended(p.proc)
		}
	}
	delays := 8 * times
	for i := range delays {
		name := fmt.Sprintf("killed %v in", startup*time.Duration(i)/time.Duration(delays))
		if kills%2 == 0 {
			withLog(name)
		}
		addr := freeAddr(t)
		p := launch(t, name, addr, serverEnv(dir, addr), "serve")
		kills++
		select {
		case <-p.exited:
		case <-time.After(startup * time.Duration(i) / time.Duration(delays)):
		}
		p.kill9()
		ended(p)
	}
	for i := range 2 * times {
		name := fmt.Sprintf("killed as its rebuild ended, %d", i)
		withLog(name)
		addr := freeAddr(t)
		p := launch(t, name, addr, serverEnv(dir, addr), "serve")
		kills++
		p.waitLog("in-memory state rebuilt")
		p.kill9()
		ended(p)
	}

	last := startServer(t, "after the loop", dir)
	c := last.as(hc, tok)
	for _, id := range acknowledged {
		r, err := c.GetNodeWithResponse(ctx, id)
		if err != nil {
			t.Fatalf("acknowledged node %s: %v", id, err)
		}
		if r.StatusCode() != http.StatusOK {
			t.Fatalf("acknowledged node %s: %d %s", id, r.StatusCode(), r.Body)
		}
	}
	removed += strings.Count(last.stderr.String(), "removed an empty badger file")
	t.Logf("%d kill points during start-up (strace: %v; a start takes %v), %d starts, %d acknowledged writes kept, %d empty badger files removed, %v in all",
		kills, traced, startup.Round(time.Millisecond), starts+1, len(acknowledged), removed, time.Since(began).Round(time.Second))
}

// strace reports whether strace can deliver a signal on a syscall here (it
// needs ptrace); without it the syscall kill points are left out.
func strace(t *testing.T) bool {
	cmd := exec.Command("strace", "-qq", "-o", "/dev/null", "-e", "trace=write", "-e", "inject=write:signal=SIGKILL", "echo", "x")
	out, err := cmd.CombinedOutput()
	if !killed(cmd.ProcessState) {
		t.Logf("strace did not kill at a syscall (%v, %s): syscall kill points left out", err, out)
		return false
	}
	return true
}

// killed reports whether a process ended by SIGKILL.
func killed(st *os.ProcessState) bool {
	if st == nil {
		return false
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// launchTraced starts `tether serve` on dir under strace, which sends it
// SIGKILL as it enters its n-th call of syscall (counted per thread, so the
// n-th on whichever thread gets there first); with path, only calls on
// that file count.
func launchTraced(t *testing.T, name, dir, syscall string, n int, path string) *tracedProc {
	t.Helper()
	addr := freeAddr(t)
	args := []string{"-f", "-qq", "-o", "/dev/null", "-e", "trace=" + syscall,
		"-e", fmt.Sprintf("inject=%s:signal=SIGKILL:when=%d", syscall, n)}
	if path != "" {
		args = append(args, "-P", path)
	}
	cmd := exec.Command("strace", append(args, tetherBin, "serve")...)
	cmd.Env = serverEnv(dir, addr)
	p := &tracedProc{launchCmd(t, name, addr, cmd, nil)}
	t.Cleanup(p.killTracee) // before launchCmd's, which kills strace
	return p
}

// vlogPath is the value log that the n-th open of Badger by the next start
// on dir makes: Badger numbers them on from the highest it finds (a start
// removes an empty newest one first).
func vlogPath(t *testing.T, dir string, n int) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	top := 0
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".vlog")
		fid, err := strconv.Atoi(id)
		if info, ierr := e.Info(); ok && err == nil && ierr == nil && info.Size() > 0 {
			top = max(top, fid)
		}
	}
	return filepath.Join(dir, fmt.Sprintf("%06d.vlog", top+n))
}

// tracedProc is tether under strace: p.cmd is strace, which ends as tether
// does (by the same signal).
type tracedProc struct{ *proc }

// readyOrGone waits until tether answers /ready (true) or has ended.
func (p *tracedProc) readyOrGone() bool {
	p.t.Helper()
	hc := &http.Client{Timeout: time.Second}
	deadline := time.After(readyTimeout)
	for {
		select {
		case <-p.exited:
			return false
		case <-deadline:
			p.t.Fatalf("%s: tether neither ended nor was ready within %v", p.name, readyTimeout)
		case <-time.After(10 * time.Millisecond):
		}
		if resp, err := hc.Get(p.url + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
	}
}

// kill9 kills tether (strace's child), which ends strace by the same signal.
func (p *tracedProc) kill9() {
	p.t.Helper()
	p.killTracee()
	<-p.exited
}

// killTracee sends SIGKILL to strace's children (tether), if any are left.
func (p *tracedProc) killTracee() {
	pid := p.cmd.Process.Pid
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return // strace has ended, and tether with it
	}
	for _, f := range strings.Fields(string(children)) {
		if child, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
	}
}

// waitLog waits (bounded) until the process has logged msg, failing the test
// if it exits first.
func (p *proc) waitLog(msg string) {
	p.t.Helper()
	deadline := time.After(readyTimeout)
	for !strings.Contains(p.stderr.String(), msg) {
		select {
		case <-p.exited:
			p.t.Fatalf("%s: tether exited (%v) before it logged %q", p.name, p.cmd.ProcessState, msg)
		case <-deadline:
			p.t.Fatalf("%s: tether did not log %q within %v", p.name, msg, readyTimeout)
		case <-time.After(time.Millisecond):
		}
	}
}
