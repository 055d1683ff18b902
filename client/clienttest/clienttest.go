package clienttest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/testserver"
)

// Clock is a fake clock: it moves only when Advance (or Set) is called,
// and then fires every timer that came due.
type Clock = clocktest.Fake

// NewClock returns a fake clock set to start. It also fits
// lease.Options.Clock, for in-process tests without HTTP.
func NewClock(start time.Time) *Clock { return clocktest.New(start) }

// DefaultTenant is the tenant of Server.AdminToken and Server.Client when
// Options name none.
const DefaultTenant = "acme"

// TokenTTL is how long minted tokens are valid, on the server's clock.
const TokenTTL = 24 * time.Hour

// Options change the server New starts. The zero value (or nil) is a
// durable store in a temporary directory on a fake clock set to now.
type Options struct {
	// Clock is the server's fake clock (nil: a new one at the current time,
	// to the millisecond).
	Clock *Clock
	// WallClock runs the server on the wall clock instead: leases expire
	// in real time.
	WallClock bool
	// InMemory keeps the store in memory (faster; no directory).
	InMemory bool
	// ReaperInterval is the most an expired lease waits for the reaper
	// (0: one second of the server's clock).
	ReaperInterval time.Duration
	// Tenant is the tenant of AdminToken and Client (DefaultTenant when
	// empty).
	Tenant string
	// ClaimTTLDefault and MaxAttempts are the tenants' defaults (0: five
	// minutes and 5, as `tether serve`).
	ClaimTTLDefault time.Duration
	MaxAttempts     int64
}

// Server is a real Tether serving on a free loopback port.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string
	// Dir is its data directory ("" with Options.InMemory).
	Dir string
	// Tenant is the tenant of AdminToken and Client.
	Tenant string
	// AdminToken is a token of the "admin" identity with role admin in
	// Tenant, and Client a generated client that sends it.
	AdminToken string
	Client     *client.ClientWithResponses
	// Clock is the server's fake clock; nil with Options.WallClock.
	Clock *Clock

	srv  *server.Server
	tmp  string // the directory Start made, removed by Close
	once sync.Once
	err  error
}

// New starts a server for t, shut down when t ends; a failure to start or
// to shut down cleanly fails t.
func New(t testing.TB, opts *Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("clienttest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("clienttest: %v", err)
		}
	})
	return s
}

// Start is New for code without a testing.TB (TestMain, one server shared
// by a package's tests; an example): the caller must Close the server.
func Start(opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	s := &Server{Tenant: opts.Tenant}
	if s.Tenant == "" {
		s.Tenant = DefaultTenant
	}
	var cfg server.Config
	if opts.InMemory {
		cfg = testserver.ConfigIn("")
		testserver.InMemory(&cfg)
	} else {
		dir, err := os.MkdirTemp("", "clienttest-")
		if err != nil {
			return nil, err
		}
		s.tmp, s.Dir = dir, dir
		cfg = testserver.ConfigIn(dir)
	}
	switch {
	case opts.WallClock:
		cfg.Clock = nil
	case opts.Clock != nil:
		cfg.Clock = opts.Clock
	}
	if c, ok := cfg.Clock.(*Clock); ok {
		s.Clock = c
	}
	if opts.ReaperInterval > 0 {
		cfg.ReaperInterval = opts.ReaperInterval
	}
	if opts.ClaimTTLDefault > 0 {
		cfg.Tenant.Defaults.ClaimTTLDefaultMS = opts.ClaimTTLDefault.Milliseconds()
	}
	if opts.MaxAttempts > 0 {
		cfg.Tenant.Defaults.MaxAttemptsDefault = opts.MaxAttempts
	}
	srv, url, err := testserver.Listen(cfg)
	if err != nil {
		_ = s.removeDir()
		return nil, fmt.Errorf("error starting the server: %w", err)
	}
	s.srv, s.URL = srv, url
	s.AdminToken = s.Token(s.Tenant, "admin", "admin")
	s.Client = s.ClientFor(s.Tenant, "admin", "admin")
	return s, nil
}

// Close shuts the server down, draining its requests (for at most ten
// seconds), and removes its directory. A second Close returns the first's
// error.
func (s *Server) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.err = errors.Join(s.srv.Shutdown(ctx), s.removeDir())
	})
	return s.err
}

func (s *Server) removeDir() error {
	if s.tmp == "" {
		return nil
	}
	return os.RemoveAll(s.tmp)
}

// Token mints a token for worker in tenant with roles (none: worker), valid
// for TokenTTL of the server's clock.
func (s *Server) Token(tenant, worker string, roles ...string) string {
	tok, err := testserver.SignToken(tenant, worker, s.Now().Add(TokenTTL), roles...)
	if err != nil {
		panic("clienttest: HS256 signing failed: " + err.Error()) // only a broken crypto library fails it
	}
	return tok
}

// ClientFor is a generated client of the server that acts as worker in
// tenant with roles (none: worker).
func (s *Server) ClientFor(tenant, worker string, roles ...string) *client.ClientWithResponses {
	c, err := client.NewClientWithResponses(s.URL,
		client.WithBearerToken(s.Token(tenant, worker, roles...)),
		client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	if err != nil {
		panic("clienttest: " + err.Error()) // the URL is ours and well formed
	}
	return c
}

// Now is the server's time.
func (s *Server) Now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}

// Advance moves the server's fake clock by d: every lease, delay and retry
// that came due ends or fires (the reaper settles an expiry within
// Options.ReaperInterval of the new time). It panics on a wall-clock
// server.
func (s *Server) Advance(d time.Duration) {
	if s.Clock == nil {
		panic("clienttest: Advance on a server with Options.WallClock")
	}
	s.Clock.Advance(d)
}
