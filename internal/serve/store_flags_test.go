package serve

import (
	"testing"

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
	require.ErrorContains(t, loadStoreEnv(&s, storeFlags{store: "postgres"}), `TETHER_STORE must be badger or etcd, not "postgres"`)
	require.ErrorContains(t, loadStoreEnv(&s, storeFlags{endpoints: "etcd:2379"}), `TETHER_ETCD_ENDPOINTS: "etcd:2379" is not an http(s)://host:port URL`)
}
