package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a PostgreSQL server run from this process: its data directory
// is a temporary one, its superuser "postgres" trusted on loopback.
type Server struct {
	// BinDir holds the PostgreSQL programs the server runs (initdb,
	// postgres, pg_ctl, pgbench, ...).
	BinDir string
	// Port is the loopback port the server listens on.
	Port int
	// Dir holds the server's data directory (Dir/data), its socket and its
	// log (Dir/log).
	Dir string

	cred *syscall.Credential // the postgres user's, when running as root

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil while the server is not running
	exited chan struct{} // closed when cmd has ended
}

// errNoPrograms says this machine has no PostgreSQL programs.
var errNoPrograms = errors.New("no PostgreSQL programs under /usr/lib/postgresql/*/bin")

// binDir is the bin directory of the newest PostgreSQL installed, or
// errNoPrograms.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var found []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return "", errNoPrograms
	}
	version := func(d string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return v }
	slices.SortFunc(found, func(a, b string) int { return version(a) - version(b) })
	return found[len(found)-1], nil
}

// newServer makes a server's directory under parent (the system's temporary
// directory if empty) and runs initdb in it; Start runs the server.
func newServer(parent string) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "tether-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{BinDir: bin, Dir: dir}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	initdb := s.command("initdb", "-D", s.dataDir(), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return s, nil
}

// postgresUser is the credential of the postgres user, which the programs
// run as when this process is root.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.Dir, "log") }

// command is one of the server's programs, run as the postgres user when
// this process is root.
func (s *Server) command(program string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.BinDir, program), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// startAttempts is how many free ports start tries: one picked may be
// taken by another process before the server binds it.
const startAttempts = 3

// start runs the server on a free port and waits until it takes
// connections.
func (s *Server) start() error {
	var err error
	for range startAttempts {
		if s.Port == 0 {
			if s.Port, err = freePort(); err != nil {
				return err
			}
		}
		if err = s.run(); err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "could not bind") && !strings.Contains(err.Error(), "could not create any TCP/IP sockets") {
			return err
		}
		s.Port = 0
	}
	return err
}

// run starts the postgres process on s.Port and waits until it serves.
func (s *Server) run() error {
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		return nil
	}
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	defer logf.Close()
	offset, _ := logf.Seek(0, 2)
	cmd := s.command("postgres", "-D", s.dataDir(),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port="+strconv.Itoa(s.Port),
		"-c", "unix_socket_directories="+s.Dir,
		"-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on",
		"-c", "max_connections=300",
		"-c", "shared_buffers=32MB",
		"-c", "log_min_messages=warning")
	// A process group of its own, so that signals meant for the test
	// binary's group (a ^C) do not reach it; and the parent-death signal,
	// so the server never outlives the test binary.
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.Stdout, cmd.Stderr = logf, logf
	// The parent-death signal fires when the thread that started the child
	// ends, not the process: the child is started from a goroutine locked
	// to its thread until the child has exited, so no other goroutine can
	// take that thread and end it (one that locks a thread and returns
	// ends it).
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		s.mu.Unlock()
		return fmt.Errorf("starting postgres: %w", err)
	}
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.url("postgres"))
		if err == nil {
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("postgres exited at start: %s", s.logSince(offset))
		default:
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("postgres did not take connections in 60 s: %v\n%s", err, s.logSince(offset))
		}
		time.Sleep(20 * time.Millisecond) // another process: its answer is the only signal
	}
}

// logSince is the server's log from offset on, its last lines.
func (s *Server) logSince(offset int64) string {
	b, err := os.ReadFile(s.logPath())
	if err != nil || int64(len(b)) < offset {
		return ""
	}
	return tail(string(b[offset:]), 30)
}

// Log is the last n lines of the server's log.
func (s *Server) Log(n int) string {
	b, _ := os.ReadFile(s.logPath())
	return tail(string(b), n)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// freePort is a loopback port free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// url is the URL of database db on the server, as its superuser.
func (s *Server) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// Stop shuts the server down cleanly (a fast shutdown: sessions are ended,
// everything committed is kept) and waits until it has ended.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	<-s.exited
	s.cmd = nil
}

// Kill kills the server and every backend at once with SIGKILL, as a crash
// would, and waits until all have ended. Its data stays: Restart starts it
// again, and PostgreSQL recovers from its WAL.
//
// The backends are the postmaster's children, each in a process group of
// its own (PostgreSQL calls setsid in every child), so killing the
// postmaster's group would leave them running a moment, long enough to
// answer a query. So the postmaster is stopped (it forks no more), its
// children are listed, and all are killed.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	kids := children(pid)
	for _, k := range kids {
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-s.exited
	// A restart must not find the old shared memory still attached: wait
	// until the children are gone (reaped by init), or give up after a
	// while (a zombie nobody reaps would answer forever).
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		alive := false
		for _, k := range kids {
			if syscall.Kill(k, 0) == nil {
				alive = true
			}
		}
		if !alive {
			break
		}
		time.Sleep(5 * time.Millisecond) // no signal tells of another process's children ending
	}
	s.cmd = nil
}

// children are the pids of the processes whose parent is pid, from /proc.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil && ppid == pid {
			if k, err := strconv.Atoi(filepath.Base(filepath.Dir(st))); err == nil {
				out = append(out, k)
			}
		}
	}
	return out
}

// Restart starts the server again on its port, from its data directory,
// and waits until it takes connections.
func (s *Server) Restart() error {
	return s.run()
}

// remove stops the server and removes its directory.
func (s *Server) remove() {
	s.Stop()
	_ = os.RemoveAll(s.Dir)
}
