package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether-run/tether/internal/testskip"
)

// EnvURL names a PostgreSQL server to test against instead of one started
// here: a URL whose user may create databases (its database is the one
// connected to for that).
const EnvURL = "TETHER_TEST_POSTGRES_URL"

// shared is the server the test binary's tests share, started on first use.
var shared struct {
	sync.Mutex
	inMain bool    // Run is running the tests: it stops the server after
	server *Server // nil until started
	err    error   // why it did not start
}

// Main runs the package's tests and exits with their result, after stopping
// the shared server: `func TestMain(m *testing.M) { pgtest.Main(m) }`.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run runs the package's tests, stops the shared server and removes its
// directory, and returns the tests' exit code: for a TestMain that does
// more than Main.
func Run(m *testing.M) int {
	shared.Lock()
	shared.inMain = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.server != nil {
		shared.server.remove()
		shared.server = nil
	}
	shared.inMain = false
	return code
}

// URL is the URL of a fresh, empty database for t alone, dropped when t
// ends: on the server TETHER_TEST_POSTGRES_URL names, or else on the test
// binary's shared server. It skips t when neither can be had because this
// machine has no PostgreSQL.
func URL(t testing.TB) string {
	t.Helper()
	if ext := os.Getenv(EnvURL); ext != "" {
		return freshDatabase(t, ext)
	}
	shared.Lock()
	if !shared.inMain {
		shared.Unlock()
		t.Fatal("pgtest.URL needs the package's TestMain to run its tests through pgtest.Main or pgtest.Run, which stop the shared PostgreSQL")
	}
	if shared.server == nil && shared.err == nil {
		shared.server, shared.err = startShared()
	}
	s, err := shared.server, shared.err
	shared.Unlock()
	if errors.Is(err, errNoPrograms) {
		testskip.Missing(t, "postgresql", "not installed")
	}
	if err != nil {
		t.Fatalf("starting the shared PostgreSQL: %v", err)
	}
	return freshDatabase(t, s.url("postgres"))
}

func startShared() (*Server, error) {
	removeStale("", time.Now())
	s, err := newServer("")
	if err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		s.remove()
		return nil, err
	}
	return s, nil
}

// Start starts a PostgreSQL server for t alone, which t may Kill, Stop and
// Restart; it is stopped and its directory removed when t ends. It skips t
// when this machine has no PostgreSQL programs (TETHER_TEST_POSTGRES_URL
// does not help: a test that kills the server needs one of its own).
func Start(t testing.TB) *Server {
	t.Helper()
	// Not under t.TempDir(): as root the postgres user could not enter it.
	s, err := newServer("")
	if errors.Is(err, errNoPrograms) {
		testskip.Missing(t, "postgresql", "not installed")
	}
	if err != nil {
		t.Fatalf("initdb: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("PostgreSQL's log (%s):\n%s", s.Dir, s.Log(40))
		}
		s.remove()
	})
	if err := s.start(); err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	return s
}

// URL is the URL of a fresh, empty database on s for t alone, dropped when t
// ends (if the server runs then).
func (s *Server) URL(t testing.TB) string {
	t.Helper()
	return freshDatabase(t, s.url("postgres"))
}

// freshDatabase creates a database with a random name on the server admin
// connects to, and drops it when t ends; it returns the new database's URL.
func freshDatabase(t testing.TB, admin string) string {
	t.Helper()
	name := "tether_test_" + randomSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connecting to PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() { dropDatabase(t, admin, name) })
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("PostgreSQL URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// dropDatabase drops name, ending its sessions first (a pool the test did
// not close). A server that is gone (a test killed it for good) is let be:
// its directory goes with it.
func dropDatabase(t testing.TB, admin, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Logf("not dropping database %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		// Servers without FORCE (CockroachDB): a plain drop.
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	}
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(hex.EncodeToString(b[:]))
}

// String names the server in logs.
func (s *Server) String() string {
	return fmt.Sprintf("PostgreSQL on 127.0.0.1:%d (%s)", s.Port, s.Dir)
}
