package pgfailover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether-run/tether/internal/testskip"
)

// Formation is a running pg_auto_failover formation: a monitor and two
// Postgres nodes, "a" (the first primary) and "b" (its synchronous
// secondary).
type Formation struct {
	// Dir holds every node's data directory, pg_autoctl's configuration
	// and state, and the nodes' logs (Dir/<name>.log).
	Dir string
	// Database is the database made on the primary for the test.
	Database string

	pgBin   string // the PostgreSQL programs (pg_ctl, ...)
	autoctl string
	cred    *syscall.Credential // the postgres user's, when running as root
	monitor *Node
	nodes   []*Node // a, b
}

// Node is one `pg_autoctl ... --run` process and its Postgres.
type Node struct {
	Name string
	Port int

	pgdata string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once
}

// Timeouts of the monitor, cut from pg_auto_failover's defaults so that a
// failover takes seconds (see doc.go).
var monitorSettings = map[string]string{
	"pgautofailover.health_check_period":               "1000",
	"pgautofailover.health_check_timeout":              "1000",
	"pgautofailover.health_check_max_retries":          "1",
	"pgautofailover.health_check_retry_delay":          "500",
	"pgautofailover.node_considered_unhealthy_timeout": "3000",
	"pgautofailover.primary_demote_timeout":            "5000",
}

// startTimeout bounds each step of bringing the formation up.
const startTimeout = 2 * time.Minute

// Start brings up a formation for t, with a primary and a synchronous
// secondary in the states "primary" and "secondary", and a database of
// database's name on it; it is stopped when t ends. t is skipped when
// pg_autoctl or the PostgreSQL programs are missing.
func Start(t testing.TB, database string) *Formation {
	t.Helper()
	testskip.Programs(t, "pg_autoctl")
	pgBin, err := binDir()
	if err != nil {
		testskip.Missing(t, "PostgreSQL", err.Error())
	}
	f, err := start(pgBin, database)
	if f != nil {
		t.Cleanup(func() {
			if t.Failed() {
				f.showLogs(t)
			}
			f.Stop()
		})
	}
	if err != nil {
		t.Fatalf("error starting a pg_auto_failover formation: %v", err)
	}
	return f
}

func start(pgBin, database string) (*Formation, error) {
	autoctl, err := exec.LookPath("pg_autoctl")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tether-pgfailover-")
	if err != nil {
		return nil, err
	}
	f := &Formation{Dir: dir, Database: database, pgBin: pgBin, autoctl: autoctl}
	if os.Geteuid() == 0 {
		if f.cred, err = postgresUser(); err != nil {
			return f, err
		}
		if err := os.Chown(dir, int(f.cred.Uid), int(f.cred.Gid)); err != nil {
			return f, err
		}
	}
	ports, err := freePorts(3)
	if err != nil {
		return f, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()

	f.monitor = &Node{Name: "monitor", Port: ports[0]}
	if err := f.run(f.monitor, "create", "monitor", "--hostname", "127.0.0.1"); err != nil {
		return f, err
	}
	if err := f.tuneMonitor(ctx); err != nil {
		return f, err
	}
	monitorURL := fmt.Sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", ports[0])
	for i, name := range []string{"a", "b"} {
		n := &Node{Name: name, Port: ports[i+1]}
		f.nodes = append(f.nodes, n)
		if err := f.run(n, "create", "postgres", "--hostname", "127.0.0.1", "--name", name, "--monitor", monitorURL); err != nil {
			return f, err
		}
		// The second node joins once the first is a primary on its own.
		want := map[string]string{"a": "single"}
		if name == "b" {
			want = map[string]string{"a": "primary", "b": "secondary"}
		}
		if err := f.WaitStates(ctx, want); err != nil {
			return f, err
		}
	}
	if err := f.createDatabase(ctx); err != nil {
		return f, err
	}
	return f, nil
}

// run starts `pg_autoctl <args> --pgdata ... --pgport ... --run` for n.
func (f *Formation) run(n *Node, args ...string) error {
	n.pgdata = filepath.Join(f.Dir, n.Name)
	n.log = filepath.Join(f.Dir, n.Name+".log")
	logFile, err := os.Create(n.log)
	if err != nil {
		return err
	}
	args = append(args, "--pgdata", n.pgdata, "--pgport", strconv.Itoa(n.Port),
		"--pgctl", filepath.Join(f.pgBin, "pg_ctl"), "--auth", "trust", "--no-ssl", "--run")
	n.cmd = f.command(args...)
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	// A group of its own, so that KillNode takes the keeper and its Postgres
	// at once, as a crash of the machine would.
	n.cmd.SysProcAttr.Setpgid = true
	n.cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if f.cred != nil {
		_ = logFile.Chown(int(f.cred.Uid), int(f.cred.Gid))
	}
	if err := n.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("error starting pg_autoctl for %s: %w", n.Name, err)
	}
	n.exited = make(chan struct{})
	go func() {
		_ = n.cmd.Wait()
		logFile.Close()
		close(n.exited)
	}()
	return nil
}

// command is pg_autoctl with args, run as the postgres user when root, with
// pg_autoctl's configuration and state kept in the formation's directory.
func (f *Formation) command(args ...string) *exec.Cmd {
	cmd := exec.Command(f.autoctl, args...)
	cmd.Dir = f.Dir
	cmd.Env = []string{
		"PATH=" + f.pgBin + ":" + os.Getenv("PATH"),
		"HOME=" + f.Dir,
		"XDG_CONFIG_HOME=" + filepath.Join(f.Dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(f.Dir, "share"),
		"XDG_RUNTIME_DIR=" + filepath.Join(f.Dir, "run"),
		"PG_CONFIG=" + filepath.Join(f.pgBin, "pg_config"),
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: f.cred}
	return cmd
}

// tuneMonitor waits for the monitor's Postgres and shortens its timeouts.
func (f *Formation) tuneMonitor(ctx context.Context) error {
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/pg_auto_failover?sslmode=disable", f.monitor.Port)
	conn, err := connectRetry(ctx, url, f.monitor)
	if err != nil {
		return fmt.Errorf("the monitor did not answer: %w", err)
	}
	defer conn.Close(context.Background())
	for _, k := range slices.Sorted(maps.Keys(monitorSettings)) {
		if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = %s", k, monitorSettings[k])); err != nil {
			return fmt.Errorf("error setting %s on the monitor: %w", k, err)
		}
	}
	_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
	return err
}

// createDatabase makes the test's database on the primary.
func (f *Formation) createDatabase(ctx context.Context) error {
	conn, err := connectRetry(ctx, f.url("postgres"), nil)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{f.Database}.Sanitize())
	return err
}

// connectRetry connects to url until ctx ends or n's process exits.
func connectRetry(ctx context.Context, url string, n *Node) (*pgx.Conn, error) {
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, url)
		cancel()
		if err == nil {
			return conn, nil
		}
		if n != nil {
			select {
			case <-n.exited:
				return nil, fmt.Errorf("pg_autoctl for %s exited: %v", n.Name, err)
			default:
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// URL is the multi-host URL of the formation's database: a client reaches
// whichever node is the writable primary.
func (f *Formation) URL() string { return f.url(f.Database) }

func (f *Formation) url(db string) string {
	hosts := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(n.Port)
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?target_session_attrs=read-write&sslmode=disable&connect_timeout=2",
		strings.Join(hosts, ","), db)
}

// NodeURL is the URL of one node's copy of the database (any state).
func (f *Formation) NodeURL(name string) string {
	for _, n := range f.nodes {
		if n.Name == name {
			return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", n.Port, f.Database)
		}
	}
	return ""
}

// NodeState is one node as the monitor sees it (pg_autoctl show state).
type NodeState struct {
	Name     string `json:"nodename"`
	Port     int    `json:"nodeport"`
	Current  string `json:"current_group_state"`
	Assigned string `json:"assigned_group_state"`
	Health   int    `json:"health"`
}

// States is `pg_autoctl show state --json` on the monitor.
func (f *Formation) States(ctx context.Context) ([]NodeState, error) {
	cmd := f.command("show", "state", "--pgdata", f.monitor.pgdata, "--json")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("pg_autoctl show state: %w: %.300s", err, errOut.String())
	}
	var states []NodeState
	if err := json.Unmarshal([]byte(out.String()), &states); err != nil {
		return nil, fmt.Errorf("pg_autoctl show state: %w: %.300s", err, out.String())
	}
	return states, nil
}

// WaitStates waits until every named node reports, and is assigned, its
// state in want.
func (f *Formation) WaitStates(ctx context.Context, want map[string]string) error {
	var last []NodeState
	for {
		states, err := f.States(ctx)
		if err == nil {
			last = states
			ok := 0
			for _, s := range states {
				if w, named := want[s.Name]; named && s.Current == w && s.Assigned == w {
					ok++
				}
			}
			if ok == len(want) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes not in states %v: %w (last seen %+v, %v)", want, ctx.Err(), last, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Primary is the name of the node the monitor has as the writable primary
// ("primary", or "wait_primary" while its secondary is away), or "".
func (f *Formation) Primary(ctx context.Context) (string, error) {
	states, err := f.States(ctx)
	if err != nil {
		return "", err
	}
	for _, s := range states {
		if s.Current == s.Assigned && (s.Current == "primary" || s.Current == "wait_primary" || s.Current == "single") {
			return s.Name, nil
		}
	}
	return "", nil
}

// WaitPrimary waits until a node other than old is the writable primary and
// returns its name.
func (f *Formation) WaitPrimary(ctx context.Context, old string) (string, error) {
	for {
		p, err := f.Primary(ctx)
		if err == nil && p != "" && p != old {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no new primary: %w (last: %q, %v)", ctx.Err(), p, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// KillNode kills the named node's keeper and its Postgres with SIGKILL at
// once (its process group), as a crash of its machine would: killing only
// the Postgres would have its keeper restart it in place, with no failover.
func (f *Formation) KillNode(name string) error {
	for _, n := range f.nodes {
		if n.Name == name {
			n.kill()
			return nil
		}
	}
	return fmt.Errorf("no node %q", name)
}

func (n *Node) kill() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	n.once.Do(func() {
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.exited
	})
}

// Stop kills every node and removes the formation's directory.
func (f *Formation) Stop() {
	for _, n := range f.nodes {
		n.kill()
	}
	if f.monitor != nil {
		f.monitor.kill()
	}
	_ = os.RemoveAll(f.Dir)
}

// showLogs logs the end of every node's log (on a failed test).
func (f *Formation) showLogs(t testing.TB) {
	for _, n := range append([]*Node{f.monitor}, f.nodes...) {
		if n == nil {
			continue
		}
		b, err := os.ReadFile(n.log)
		if err != nil {
			continue
		}
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		t.Logf("--- %s's log (end) ---\n%s", n.Name, b)
	}
}

// binDir is the bin directory of the newest PostgreSQL installed.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var found []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return "", errors.New("no PostgreSQL programs under /usr/lib/postgresql/*/bin")
	}
	version := func(d string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return v }
	slices.SortFunc(found, func(a, b string) int { return version(a) - version(b) })
	return found[len(found)-1], nil
}

// postgresUser is the credential of the postgres user.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres user: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePorts are k loopback ports free now.
func freePorts(k int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range k {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
