package serve

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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
	require.ErrorContains(t, loadStoreEnv(&s, storeFlags{store: "mysql"}), `TETHER_STORE must be badger, etcd or postgres, not "mysql"`)
	require.ErrorContains(t, loadStoreEnv(&s, storeFlags{endpoints: "etcd:2379"}), `TETHER_ETCD_ENDPOINTS: "etcd:2379" is not an http(s)://host:port URL`)
}

// TETHER_STORE=postgres reads its settings, and a bad one is refused with
// the setting named, the URL's password never quoted.
func TestPostgresSettings(t *testing.T) {
	for _, name := range []string{"TETHER_STORE", "TETHER_ADVERTISE_URL", "TETHER_BLOB_DIR", "TETHER_POSTGRES_URL", "TETHER_POSTGRES_POOL_SIZE",
		"TETHER_POSTGRES_SCHEMA", "TETHER_POSTGRES_MIGRATE", "TETHER_POSTGRES_SHARDS", "TETHER_POSTGRES_LEASE_TTL_MS"} {
		t.Setenv(name, "")
	}
	load := func(t *testing.T, env ...string) (settings, error) {
		for i := 0; i+1 < len(env); i += 2 {
			t.Setenv(env[i], env[i+1])
		}
		s := settings{Addr: "10.0.0.5:36725"}
		return s, loadStoreEnv(&s, storeFlags{store: "postgres"})
	}
	_, err := load(t)
	require.ErrorContains(t, err, "TETHER_POSTGRES_URL")

	s, err := load(t, "TETHER_POSTGRES_URL", "postgres://u:secret@db:5432/app?sslmode=verify-full")
	require.NoError(t, err)
	require.Equal(t, postgresSettings{
		URL: "postgres://u:secret@db:5432/app?sslmode=verify-full", PoolSize: 16, Schema: "tether", Migrate: "auto",
		Shards: 16, LeaseTTL: 5 * time.Second, Advertise: "http://10.0.0.5:36725",
	}, s.Postgres)
	require.Equal(t, "db:5432/app", s.Postgres.where())

	for _, bad := range [][2]string{
		{"TETHER_POSTGRES_POOL_SIZE", "1"},
		{"TETHER_POSTGRES_SCHEMA", "Bad-Name"},
		{"TETHER_POSTGRES_MIGRATE", "never"},
		{"TETHER_POSTGRES_SHARDS", "101"},
		{"TETHER_POSTGRES_LEASE_TTL_MS", "500"},
	} {
		t.Run(bad[0], func(t *testing.T) {
			_, err := load(t, bad[0], bad[1])
			require.ErrorContains(t, err, bad[0])
		})
	}
	_, err = load(t, "TETHER_POSTGRES_URL", "postgres://u:secret@db:notaport/app")
	require.ErrorContains(t, err, "TETHER_POSTGRES_URL")
	require.NotContains(t, err.Error(), "secret")
}
