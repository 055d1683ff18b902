package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/startstop"
	"github.com/tether-run/tether/internal/testserver"
)

func services(s *server.Server) map[string]startstop.Service {
	return map[string]startstop.Service{
		"leases": s.Leases, "messages": s.Messages, "blobs": s.Blobs,
		"schedules": s.Schedules, "cleaner": s.Cleaner,
	}
}

// Open starts every background service and Shutdown stops every one.
func TestShutdownStopsEveryService(t *testing.T) {
	t.Parallel()
	s := testserver.Open(t)
	for name, svc := range services(s.Server) {
		<-svc.Started()
		select {
		case <-svc.Stopped():
			t.Fatalf("%s stopped before Shutdown", name)
		default:
		}
	}
	s.Stop()
	for name, svc := range services(s.Server) {
		select {
		case <-svc.Stopped():
		default:
			t.Fatalf("%s still runs after Shutdown", name)
		}
	}
}

// An Open that fails after the store is open undoes what it built: the
// store is closed (the data directory opens again) and nothing it started
// keeps running.
func TestFailedOpenClosesTheStore(t *testing.T) {
	t.Parallel()
	cfg := testserver.Config(t)
	file := filepath.Join(t.TempDir(), "not-a-directory")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	cfg.BlobDir = filepath.Join(file, "blobs") // the blob store cannot open
	_, err := server.Open(context.Background(), cfg)
	require.Error(t, err)

	cfg.BlobDir = ""
	s, err := server.Open(context.Background(), cfg)
	require.NoError(t, err, "the failed Open left the store open")
	require.NoError(t, s.Shutdown(context.Background()))
}
