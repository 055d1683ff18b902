package testserver

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/core"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/tenancy"
)

// Secret signs the tokens of every test server.
const Secret = "test-secret-0123456789abcdef0123456789"

// Server is a real Tether serving on a free loopback port.
type Server struct {
	*server.Server
	T   testing.TB
	URL string
	// Clock is the server's fake clock; nil when it runs on the wall clock.
	Clock *clocktest.Fake
	// DataDir is its TETHER_DATA_DIR ("" for a store in memory).
	DataDir string
}

// Option changes the configuration a test server starts from.
type Option func(*server.Config)

// WallClock runs the server on the wall clock instead of a fake one.
func WallClock(cfg *server.Config) { cfg.Clock = nil }

// InMemory keeps the store in memory (no data directory, no durability).
func InMemory(cfg *server.Config) { cfg.DataDir, cfg.InMemory = "", true }

// Config is what every test server starts from: a store in a temporary
// directory, a fake clock at now, a one-second reaper, a 64 KiB body limit,
// HS256 tokens signed with Secret, a static head token, and the tenant
// defaults of a fresh server.
func Config(t testing.TB) server.Config { return ConfigIn(t.TempDir()) }

// ConfigIn is Config with its data directory dir, for a harness without a
// testing.TB (client/clienttest's Start).
func ConfigIn(dir string) server.Config {
	return server.Config{
		Config: core.Config{
			DataDir:        dir,
			Clock:          clocktest.New(time.Now().UTC().Truncate(time.Millisecond)),
			ReaperInterval: time.Second,
			Tenant: tenancy.Config{
				JWTSecrets:   []string{Secret},
				HeadTokens:   []string{"head-static-token"},
				TTLCeilingMS: 86400000,
				Defaults:     tenancy.Policy{ClaimTTLDefaultMS: 300000, ClaimTTLMaxMS: 7200000, MaxAttemptsDefault: 5},
			},
		},
		MaxBodyBytes: 64 << 10,
	}
}

// Start opens a server from Config changed by opts and shuts it down when
// the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := Open(t, opts...)
	t.Cleanup(func() { s.Stop() })
	return s
}

// Open is Start for a test that shuts the server down itself (Stop).
func Open(t testing.TB, opts ...Option) *Server {
	t.Helper()
	cfg := Config(t)
	for _, o := range opts {
		o(&cfg)
	}
	return Serve(t, cfg)
}

// Serve opens a server from cfg as it is and serves it on a free port; the
// test shuts it down (Stop).
func Serve(t testing.TB, cfg server.Config) *Server {
	t.Helper()
	srv, url, err := Listen(cfg)
	require.NoError(t, err)
	s := &Server{Server: srv, T: t, URL: url, DataDir: cfg.DataDir}
	if clk, ok := cfg.Clock.(*clocktest.Fake); ok {
		s.Clock = clk
	}
	return s
}

// Listen opens a server from cfg and serves it on a free loopback port,
// returning its URL, for a harness without a testing.TB (client/clienttest);
// the caller shuts it down. When it fails, nothing is left open.
func Listen(cfg server.Config) (*server.Server, string, error) {
	srv, err := server.Open(context.Background(), cfg)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Shutdown(context.Background())
		return nil, "", err
	}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}

// Stop shuts the server down, draining its requests, and requires that to
// succeed.
func (s *Server) Stop() {
	s.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(s.T, s.Shutdown(ctx))
}

// Now is the server's time.
func (s *Server) Now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}

// Token mints a JWT for sub in tenant with roles (none: the default,
// worker), valid for an hour of the server's clock.
func (s *Server) Token(tenant, sub string, roles ...string) string {
	s.T.Helper()
	tok, err := SignToken(tenant, sub, s.Now().Add(time.Hour), roles...)
	require.NoError(s.T, err)
	return tok
}

// SignToken mints an HS256 JWT signed with Secret, which every test server
// accepts, for sub in tenant with roles (none: the default, worker),
// expiring at exp.
func SignToken(tenant, sub string, exp time.Time, roles ...string) (string, error) {
	claims := jwt.MapClaims{"sub": sub, "tid": tenant, "exp": exp.Unix()}
	if len(roles) > 0 {
		claims["roles"] = roles
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(Secret))
}
