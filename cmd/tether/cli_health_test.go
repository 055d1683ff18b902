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

func TestLocalURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:36725": "http://127.0.0.1:36725",
		"0.0.0.0:36725":   "http://127.0.0.1:36725",
		"[::]:8080":       "http://127.0.0.1:8080",
		":9000":           "http://127.0.0.1:9000",
		"10.0.0.5:36725":  "http://10.0.0.5:36725",
		"[::1]:36725":     "http://[::1]:36725",
	} {
		require.Equal(t, want, localURL(addr), addr)
	}
}

// serve's store flags win over their variables, and a bad one is refused
// with the setting named.
func TestStoreFlags(t *testing.T) {
	for _, name := range []string{"TETHER_STORE", "TETHER_ETCD_ENDPOINTS", "TETHER_ADVERTISE_URL", "TETHER_BLOB_DIR"} {
		t.Setenv(name, "")
	}
	s := settings{Addr: "10.0.0.5:36725"}
	require.NoError(t, loadStoreEnv(&s, storeFlags{}))
	require.Equal(t, storeBadger, s.Store)

	t.Setenv("TETHER_ETCD_ENDPOINTS", "http://env:2379")
	s = settings{Addr: "10.0.0.5:36725"}
	require.NoError(t, loadStoreEnv(&s, storeFlags{store: "etcd", endpoints: "http://a:2379, http://b:2379", advertise: "http://me:1"}))
	require.Equal(t, storeEtcd, s.Store)
	require.Equal(t, []string{"http://a:2379", "http://b:2379"}, s.Etcd.Endpoints)
	require.Equal(t, "http://me:1", s.Etcd.Advertise)

	t.Setenv("TETHER_STORE", "etcd")
	s = settings{Addr: "10.0.0.5:36725"}
	require.NoError(t, loadStoreEnv(&s, storeFlags{store: "badger"}))
	require.Equal(t, storeBadger, s.Store, "--store wins over TETHER_STORE")

	s = settings{Addr: "10.0.0.5:36725"}
	require.ErrorContains(t, loadStoreEnv(&s, storeFlags{store: "postgres"}), `TETHER_STORE must be badger or etcd, not "postgres"`)
	require.ErrorContains(t, loadStoreEnv(&s, storeFlags{endpoints: "etcd:2379"}), `TETHER_ETCD_ENDPOINTS: "etcd:2379" is not an http(s)://host:port URL`)
}
