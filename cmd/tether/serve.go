package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/spf13/cobra"

	"github.com/tether-run/tether/server"
)

func serveCommand() *cobra.Command {
	var addr, dataDir, logFormat string
	var dev bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the Tether server",
		Long: `Run the Tether server on an embedded Badger store.

Settings come from the environment (TETHER_ADDR, TETHER_DATA_DIR,
TETHER_JWT_SECRET, TETHER_JWT_PUBLIC_KEYS, TETHER_CLAIM_TTL_*_MS, ...; see the
README); flags override them. With --dev the server makes (and keeps, in the
data directory) an HS256 secret and prints a ready admin token.`,
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
			s.Dev = dev
			return serve(cmd.Context(), s, logFormat)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (TETHER_ADDR, default 127.0.0.1:36725)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "Badger directory (TETHER_DATA_DIR, default ./data)")
	cmd.Flags().BoolVar(&dev, "dev", false, "development mode: generate a secret and print an admin token")
	cmd.Flags().StringVar(&logFormat, "log-format", envString("TETHER_LOG_FORMAT", "text"), "access log format: text or json")
	return cmd
}

func serve(ctx context.Context, s settings, logFormat string) error {
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if logFormat == "json" {
		handler = slog.NewJSONHandler(os.Stderr, nil)
	}
	log := slog.New(handler)
	s.Server.Logger = log
	s.Server.DataDir = s.DataDir
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
	}
	if !s.Server.Tenant.HasCredentials() {
		return errors.New(`no credentials are configured, so nobody could call this server.
Set TETHER_JWT_SECRET (HS256 secrets, comma separated), TETHER_JWT_PUBLIC_KEYS
(PEM files, "kid=path,..."), or HEAD_TOKEN / LEFT_CLAW_TOKEN / RIGHT_CLAW_TOKEN,
or run "tether serve --dev" to try it out with a generated secret`)
	}
	if err := os.MkdirAll(s.DataDir, 0o700); err != nil {
		return fmt.Errorf("error creating the data directory: %w", err)
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", s.Addr, err)
	}
	srv, err := server.Open(ctx, s.Server)
	if err != nil {
		ln.Close()
		return err
	}
	url := "http://" + ln.Addr().String()
	log.Info("tether is serving", "addr", ln.Addr().String(), "data_dir", s.DataDir)
	if s.PprofAddr != "" {
		if err := servePprof(s.PprofAddr, log); err != nil {
			return err
		}
	}
	if s.Dev {
		if err := printDevBanner(url, devSecret); err != nil {
			return err
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var serveErr error
	select {
	case sig := <-sigs:
		log.Info("draining; a second signal stops at once", "signal", sig.String())
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
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("error shutting down: %w", err)
	}
	if serveErr != nil {
		return fmt.Errorf("error serving: %w", serveErr)
	}
	log.Info("stopped cleanly")
	return nil
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

func printDevBanner(url, secret string) error {
	now := time.Now()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "admin", "tid": "default", "roles": []string{"admin"},
		"iat": now.Unix(), "exp": now.Add(30 * 24 * time.Hour).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		return err
	}
	fmt.Printf(`
Tether is running in dev mode on %[1]s
An admin token for tenant "default" (valid 30 days):

  export TETHER_URL=%[1]s
  export TETHER_TOKEN=%[2]s

Try it:

  curl -s -X POST $TETHER_URL/v1/nodes -H "Authorization: Bearer $TETHER_TOKEN" \
       -d '{"id": "hello", "type": "task", "queue": "default"}'
  curl -s -X POST $TETHER_URL/v1/nodes/hello/claim -H "Authorization: Bearer $TETHER_TOKEN"

`, url, tok)
	return nil
}
