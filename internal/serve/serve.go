package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/spf13/cobra"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/internal/envflag"
	"github.com/tether-run/tether/internal/mcp"
	"github.com/tether-run/tether/internal/memlimit"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/tracing"
	"github.com/tether-run/tether/internal/version"
)

// Command is `tether serve`: the server, with its settings from flags over
// the environment over defaults (docs/configuration.md).
func Command() *cobra.Command {
	var addr, dataDir, memoryLimit string
	var lo logOptions
	var sf storeFlags
	var dev bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the Tether server",
		Long: `Run the Tether server on an embedded Badger store, or (TETHER_STORE=etcd)
as one server of a cluster whose records live in etcd (TETHER_ETCD_*), or
(TETHER_STORE=postgres) in PostgreSQL (TETHER_POSTGRES_*).

Settings come from the environment (TETHER_ADDR, TETHER_DATA_DIR,
TETHER_JWT_SECRET, TETHER_JWT_PUBLIC_KEYS, TETHER_CLAIM_TTL_*_MS, ...: every
one, with its flag and default, is in docs/configuration.md); flags override
them. With --dev the server makes (and keeps, in the
data directory) an HS256 secret and prints a ready admin token.

Logs go to stderr. The access log (--access-log, TETHER_ACCESS_LOG) is one of
  errors    requests answered 400 and above (the default)
  all       every request
  sample:N  the errors, and one in N of the other requests
  off       none
Its lines are at level INFO below 400, WARN for 4xx and ERROR for 5xx, and
--log-level (TETHER_LOG_LEVEL: debug, info, warn or error; default info)
drops every log line below it. Every answer carries an X-Request-Id, logged
or not, and every request counts in /metrics.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := loadEnv()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("addr") {
				s.Addr = addr
			}
			if cmd.Flags().Changed("data-dir") {
				s.DataDir = dataDir
			}
			if cmd.Flags().Changed("memory-limit") {
				s.MemoryLimit = memoryLimit
			}
			// After --addr: the advertise URL defaults to it.
			if err := loadStoreEnv(&s, sf); err != nil {
				return err
			}
			s.Dev = dev
			log, err := lo.logger(os.Stderr)
			if err != nil {
				return err
			}
			if s.Server.AccessLog, err = api.ParseAccessLog(lo.access); err != nil {
				return fmt.Errorf("TETHER_ACCESS_LOG: %w", err)
			}
			return serve(cmd.Context(), s, log)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (TETHER_ADDR, default 127.0.0.1:36725)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "Badger directory (TETHER_DATA_DIR, default ./data)")
	cmd.Flags().StringVar(&memoryLimit, "memory-limit", "", "the Go heap's soft limit, e.g. 2GiB, or off (TETHER_MEMORY_LIMIT, default GOMEMLIMIT's, else 90% of the cgroup's memory limit)")
	sf.register(cmd.Flags())
	cmd.Flags().BoolVar(&dev, "dev", false, "development mode: generate a secret and print an admin token")
	cmd.Flags().StringVar(&lo.format, "log-format", envflag.String("TETHER_LOG_FORMAT", "text"), "log format: text or json (TETHER_LOG_FORMAT)")
	cmd.Flags().StringVar(&lo.level, "log-level", envflag.String("TETHER_LOG_LEVEL", "info"), "lowest level logged: debug, info, warn or error (TETHER_LOG_LEVEL)")
	cmd.Flags().StringVar(&lo.access, "access-log", envflag.String("TETHER_ACCESS_LOG", api.AccessLogErrors), "requests logged: errors, all, sample:N or off (TETHER_ACCESS_LOG)")
	return cmd
}

// logOptions are the logging flags.
type logOptions struct {
	format, level, access string
}

// logger builds the server's logger, writing to w.
func (lo logOptions) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(lo.level)); err != nil {
		return nil, fmt.Errorf("TETHER_LOG_LEVEL: %q is not a level: want debug, info, warn or error", lo.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(lo.format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("TETHER_LOG_FORMAT: %q is not a log format: want text or json", lo.format)
}

func serve(ctx context.Context, s settings, log *slog.Logger) error {
	mem, err := memlimit.Decide(s.MemoryLimit, os.Getenv("GOMEMLIMIT"), "/")
	if err != nil {
		return fmt.Errorf("TETHER_MEMORY_LIMIT: %w", err)
	}
	mem.Apply()
	log.Info("memory limit", mem.LogAttrs()...)
	s.Server.Logger = log
	s.Server.DataDir = s.DataDir
	s.Server.DuringRebuild = pauseGC
	var devSecret string
	if s.Dev {
		if err := os.MkdirAll(s.DataDir, 0o700); err != nil {
			return fmt.Errorf("error creating the data directory: %w", err)
		}
		secret, err := devSecretIn(s.DataDir)
		if err != nil {
			return err
		}
		devSecret = secret
		s.Server.Tenant.JWTSecrets = append(s.Server.Tenant.JWTSecrets, secret)
		s.Server.OperatorTokens = append(s.Server.OperatorTokens, devOperatorToken(secret))
	}
	if !s.Server.Tenant.HasCredentials() {
		return errors.New(`no credentials are configured, so nobody could call this server.
Set TETHER_JWT_SECRET (HS256 secrets, comma separated), TETHER_JWT_PUBLIC_KEYS
(PEM files, "kid=path,..."), or HEAD_TOKEN / LEFT_CLAW_TOKEN / RIGHT_CLAW_TOKEN,
or run "tether serve --dev" to try it out with a generated secret`)
	}
	if s.Store == storeBadger {
		if err := os.MkdirAll(s.DataDir, 0o700); err != nil {
			return fmt.Errorf("error creating the data directory: %w", err)
		}
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", s.Addr, err)
	}
	var metricsLn net.Listener
	if s.MetricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", s.MetricsAddr); err != nil {
			ln.Close()
			return fmt.Errorf("TETHER_METRICS_ADDR: error listening on %s: %w", s.MetricsAddr, err)
		}
		defer metricsLn.Close()
	}
	s.Server.MCP = func(h http.Handler) server.MCPHandler { // /mcp: agents over MCP
		opts := s.MCP
		opts.Logger = log
		opts.Version = version.Get().Summary()
		return mcp.NewHandler(h, opts)
	}
	if s.PprofAddr != "" {
		if err := servePprof(s.PprofAddr, log); err != nil {
			ln.Close()
			return err
		}
	}
	tp, stopTracing, err := tracing.Setup(ctx, "tether", os.Getenv)
	if err != nil {
		ln.Close()
		return err
	}
	defer tracing.Flush(log, stopTracing)
	if tp != nil {
		s.Server.Tracer = tp
		log.Info("tracing is on: spans go over OTLP gRPC (OTEL_EXPORTER_OTLP_* settings)")
	}
	banner := func(url string) error {
		if !s.Dev {
			return nil
		}
		return printDevBanner(url, devSecret, filepath.Join(s.DataDir, "dev-secret"))
	}
	switch s.Store {
	case storeEtcd:
		return serveCluster(ctx, s, ln, metricsLn, log, banner)
	case storePostgres:
		return servePostgres(ctx, s, ln, metricsLn, log, banner)
	}
	srv, err := server.Open(ctx, s.Server)
	if err != nil {
		ln.Close()
		return err
	}
	// Rebuilding the in-memory state decodes every record once; hand the
	// heap that decoding left behind back to the OS before serving.
	debug.FreeOSMemory()
	// After the rebuild, which keeps both cores busy on goroutines of its
	// own: a spare P would only have run more of the GC's idle workers
	// beside them.
	procs := spareProcs()
	url := "http://" + ln.Addr().String()
	log.Info("tether is serving", "addr", ln.Addr().String(), "data_dir", s.DataDir, "gomaxprocs", procs, buildLogAttrs())
	serveMetrics(metricsLn, srv.ServeMetrics, log)
	if err := banner(url); err != nil {
		return err
	}
	return serveUntilSignal(log, func() error { return srv.Serve(ln) }, srv.Shutdown, "draining")
}

// buildLogAttrs names the build in the start log, as GET /health does.
func buildLogAttrs() slog.Attr {
	b := version.Get()
	return slog.Group("build", "version", b.Version, "commit", b.Commit, "modified", b.Modified)
}

// serveUntilSignal runs serve until SIGINT or SIGTERM (or until it fails),
// then shuts down within 30 s; a second signal exits at once. what says
// what the shutdown does first, for the log.
func serveUntilSignal(log *slog.Logger, serve func() error, shutdown func(context.Context) error, what string) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	var serveErr error
	select {
	case sig := <-sigs:
		log.Info(what+"; a second signal stops at once", "signal", sig.String())
		go func() {
			sig := <-sigs
			log.Error("stopping without draining", "signal", sig.String())
			os.Exit(1)
		}()
	case serveErr = <-errc:
		log.Error("server stopped", "err", serveErr)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("error shutting down: %w", err)
	}
	if serveErr != nil {
		return fmt.Errorf("error serving: %w", serveErr)
	}
	log.Info("stopped cleanly")
	return nil
}

// serveMetrics serves the metrics listener ln (TETHER_METRICS_ADDR; none
// when nil) with serve, in the background: the shutdown of the server
// closes it.
func serveMetrics(ln net.Listener, serve func(net.Listener) error, log *slog.Logger) {
	if ln == nil {
		return
	}
	log.Info("every series of /metrics, the per-tenant ones included, is served without a token; keep this address private", "metrics_addr", ln.Addr().String())
	go func() {
		if err := serve(ln); err != nil {
			log.Error("the metrics listener stopped", "err", err)
		}
	}()
}

// servePprof exposes the Go profiler on its own listener (keep it on
// loopback: it is unauthenticated), for profiling a running server.
func servePprof(addr string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("error listening for pprof on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	log.Info("pprof is serving", "addr", ln.Addr().String())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// devSecretIn returns the dev-mode secret kept in the data directory, making
// it on first use, so dev tokens survive restarts.
func devSecretIn(dir string) (string, error) {
	path := filepath.Join(dir, "dev-secret")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	secret := hex.EncodeToString(raw[:])
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("error keeping the dev secret: %w", err)
	}
	return secret, nil
}

func printDevBanner(url, secret, secretPath string) error {
	now := time.Now()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "admin", "tid": "default", "roles": []string{"admin"},
		"iat": now.Unix(), "exp": now.Add(30 * 24 * time.Hour).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		return err
	}
	if abs, err := filepath.Abs(secretPath); err == nil {
		secretPath = abs
	}
	fmt.Printf(`
Tether is running in dev mode on %[1]s
Paste these lines into the shell you will call it from: the server's URL, an
admin token for tenant "default" (valid 30 days), and the file with the
secret that "tether token mint" signs with, from any directory:

  export TETHER_URL=%[1]s
  export TETHER_TOKEN=%[2]s
  export TETHER_SECRET_FILE=%[4]s

Try it:

  curl -s $TETHER_URL/v1/nodes -H "Authorization: Bearer $TETHER_TOKEN" \
       --json '{"id": "hello", "type": "task", "queue": "default"}'
  curl -s -X POST $TETHER_URL/v1/nodes/hello/claim -H "Authorization: Bearer $TETHER_TOKEN"
  tether token mint --sub alice --tenant default --roles worker

An operator token, for tether backup:

  export TETHER_OPERATOR_TOKEN=%[3]s

`, url, tok, devOperatorToken(secret), secretPath)
	return nil
}

// devOperatorToken is dev mode's operator token, derived from the dev
// secret so that it survives restarts with it.
func devOperatorToken(secret string) string {
	sum := sha256.Sum256([]byte("tether dev operator token\x00" + secret))
	return "op_" + hex.EncodeToString(sum[:])
}
