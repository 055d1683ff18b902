package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server-side settings of every benchmark server.
const (
	readyTimeout = 10 * time.Minute // a 10M-node store takes a while to open
	stopTimeout  = 60 * time.Second
	clockTicks   = 100 // USER_HZ: the unit of utime and stime in /proc/<pid>/stat
)

// buildTether builds ./cmd/tether of the module the current directory is in
// into dir and returns the binary's path and a description of the source it
// was built from (commit, and whether the work tree had changes).
func buildTether(dir string) (string, string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", "", fmt.Errorf("error finding the module root: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", "", errors.New("not inside a Go module: run from the tether module or pass -tether")
	}
	bin := filepath.Join(dir, "tether")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tether")
	build.Dir = filepath.Dir(gomod)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", "", fmt.Errorf("error building tether: %w", err)
	}
	return bin, sourceOf(build.Dir), nil
}

// sourceOf describes the git state of root: the commit, and how many
// files differ from it (the benchmark measures the work tree as it is).
func sourceOf(root string) string {
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown source (not a git work tree)"
	}
	desc := "commit " + strings.TrimSpace(string(head))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		if out := strings.TrimSpace(string(st)); out != "" {
			n := strings.Count(out, "\n") + 1
			desc += fmt.Sprintf(" + %d modified files", n)
		}
	}
	return desc
}

// launcher starts tether servers with the benchmark's settings.
type launcher struct {
	bin    string
	secret string
	tmp    string // where data dirs and logs go
	n      int    // servers started so far, for unique names
	cfg    config // the store settings (etcd)

	mu      sync.Mutex
	running map[*serverProc]bool // killed by killAll on an early exit
}

// serverProc is one running `tether serve`.
type serverProc struct {
	name    string
	dataDir string
	url     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	startup time.Duration // from exec to the first 200 on /ready
	mon     *monitor
	l       *launcher
	// pprofURL is the server's profiler listener (startWithProfiler), or
	// empty.
	pprofURL string
}

// freshDataDir is a new, empty directory for a server's store.
func (l *launcher) freshDataDir(name string) (string, error) {
	l.n++
	dir := filepath.Join(l.tmp, fmt.Sprintf("data-%02d-%s", l.n, name))
	return dir, os.MkdirAll(dir, 0o700)
}

// start launches tether serve on dataDir at a free port and waits for /ready.
// extra are added environment settings (KEY=value).
func (l *launcher) start(name, dataDir string, extra ...string) (*serverProc, error) {
	return l.startOn(name, dataDir, "", extra...)
}

// startOn is start with the store in etcd under the prefix, or in
// PostgreSQL in the schema, etcdPrefix names when that is not empty
// (storeEnv; dataDir still holds what is not in the store).
func (l *launcher) startOn(name, dataDir, etcdPrefix string, extra ...string) (*serverProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(l.tmp, fmt.Sprintf("%s-%d.log", name, time.Now().UnixNano()))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"TETHER_ADDR=" + addr,
		"TETHER_DATA_DIR=" + dataDir,
		"TETHER_JWT_SECRET=" + l.secret,
		"TETHER_CLAIM_TTL_DEFAULT_MS=600000",
		"TETHER_CLAIM_TTL_MAX_MS=3600000",
		"TETHER_REAPER_INTERVAL_MS=1000",
	}
	// Profile a run: TETHER_PPROF_ADDR=127.0.0.1:6060 make bench, then fetch
	// /debug/pprof/profile from that address while a scenario runs.
	// Only with one server per stage: two cannot listen on one address.
	if v := os.Getenv("TETHER_PPROF_ADDR"); v != "" && l.cfg.servers <= 1 {
		env = append(env, "TETHER_PPROF_ADDR="+v)
	}
	if etcdPrefix != "" {
		env = append(env, l.storeEnv(etcdPrefix, addr)...)
	}
	// TETHER_MEMORY_LIMIT, GOMEMLIMIT and GOGC (the soft memory limit and
	// the GC target) reach the server too, so a run can show their effect.
	for _, k := range []string{"TETHER_MEMORY_LIMIT", "GOMEMLIMIT", "GOGC"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	p := &serverProc{
		name: name, dataDir: dataDir, url: "http://" + addr, logPath: logPath,
		exited: make(chan struct{}), l: l,
	}
	p.cmd = exec.Command(l.bin, "serve")
	p.cmd.Env = append(env, extra...)
	// The access log goes to a file: cheap for the server, there to read
	// when something fails.
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	// Should the harness die without cleaning up, the server dies with it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	began := time.Now()
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("error starting tether: %w", err)
	}
	go func() {
		_ = p.cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	l.mu.Lock()
	l.running[p] = true
	l.mu.Unlock()
	if err := p.waitReady(); err != nil {
		p.kill()
		return nil, fmt.Errorf("%s: %w\n%s", name, err, p.logTail(2000))
	}
	p.startup = time.Since(began)
	p.mon = newMonitor(p.cmd.Process.Pid)
	return p, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("error finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (p *serverProc) waitReady() error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := hc.Get(p.url + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				hc.CloseIdleConnections()
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("tether exited (%v) before it was ready", p.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("tether was not ready within %v (last: %v)", readyTimeout, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the process to end (SIGKILL after
// stopTimeout). It returns how long the drain took.
func (p *serverProc) stop() (time.Duration, error) {
	p.mon.close()
	began := time.Now()
	defer p.forget()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, fmt.Errorf("error sending SIGTERM: %w", err)
	}
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return time.Since(began), fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.name, stopTimeout)
	}
	took := time.Since(began)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return took, fmt.Errorf("%s exited with %d after SIGTERM\n%s", p.name, code, p.logTail(2000))
	}
	return took, nil
}

// kill ends the process at once (used when something went wrong).
func (p *serverProc) kill() {
	if p.mon != nil {
		p.mon.close()
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.forget()
}

func (p *serverProc) forget() {
	p.l.mu.Lock()
	delete(p.l.running, p)
	p.l.mu.Unlock()
}

// killAll kills every server still running (on an early exit).
func (l *launcher) killAll() {
	l.mu.Lock()
	ps := make([]*serverProc, 0, len(l.running))
	for p := range l.running {
		ps = append(ps, p)
	}
	l.mu.Unlock()
	for _, p := range ps {
		p.kill()
	}
}

// logTail is the end of the server's log, for error messages.
func (p *serverProc) logTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return "--- server log tail ---\n" + string(b)
}

// cpuSeconds is the server's user+system CPU time so far.
func (p *serverProc) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which may hold spaces, start after ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return float64(ut+st) / clockTicks
}

// procStatusKB reads one "Name:   123 kB" line of /proc/<pid>/status.
func procStatusKB(pid int, name string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// monitor samples a process's resident set every 100 ms and keeps the peak
// since the last reset (VmHWM is the peak over the whole life of the process,
// which spans scenarios when a server is shared).
type monitor struct {
	pid  int
	mu   sync.Mutex
	peak int64 // kB
	stop chan struct{}
	done chan struct{}
}

func newMonitor(pid int) *monitor {
	m := &monitor{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	m.sample()
	go m.run()
	return m
}

func (m *monitor) run() {
	defer close(m.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.sample()
		}
	}
}

func (m *monitor) sample() int64 {
	kb := procStatusKB(m.pid, "VmRSS")
	m.mu.Lock()
	m.peak = max(m.peak, kb)
	m.mu.Unlock()
	return kb
}

// reset starts a new peak from the current resident set.
func (m *monitor) reset() {
	kb := procStatusKB(m.pid, "VmRSS")
	m.mu.Lock()
	m.peak = kb
	m.mu.Unlock()
}

// peakMB is the peak resident set since the last reset; with lifetime set it
// is also at least the kernel's high-water mark (VmHWM).
func (m *monitor) peakMB(lifetime bool) float64 {
	m.sample()
	m.mu.Lock()
	kb := m.peak
	m.mu.Unlock()
	if lifetime {
		kb = max(kb, procStatusKB(m.pid, "VmHWM"))
	}
	return round1(float64(kb) / 1024)
}

// nowMB is the current resident set.
func (m *monitor) nowMB() float64 { return round1(float64(procStatusKB(m.pid, "VmRSS")) / 1024) }

func (m *monitor) close() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
		<-m.done
	}
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
