package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tether health exits 0 with the probe's answer while the server serves, and
// 1 with the address and the error when nothing answers.
func TestHealthCommand(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "health", t.TempDir())
	out, err := exec.Command(tetherBin, "health", "--url", srv.url).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), `"status":"ok"`)
	out, err = exec.Command(tetherBin, "health", "--ready", "--url", srv.url).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), `"status":"ready"`)

	// By default it probes TETHER_ADDR, on loopback for an unspecified host.
	port := srv.url[strings.LastIndex(srv.url, ":")+1:]
	cmd := exec.Command(tetherBin, "health", "--ready")
	cmd.Env = append(cmd.Environ(), "TETHER_ADDR=0.0.0.0:"+port)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	closed := "http://" + freeAddr(t)
	out, err = exec.Command(tetherBin, "health", "--url", closed).CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v: %s", err, out)
	require.Equal(t, 1, exit.ExitCode())
	require.Contains(t, string(out), closed+"/health")
}
