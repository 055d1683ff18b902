package serve

import "github.com/spf13/pflag"

// storeFlags are serve's flags for where the records live, the settings an
// operator reaches for beside --addr and --data-dir; each one given wins
// over its variable (docs/configuration.md lists both).
type storeFlags struct {
	store, endpoints, advertise string
}

func (f *storeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.store, "store", "", "where the records live: badger (the data directory), etcd or postgres (TETHER_STORE, default badger)")
	fs.StringVar(&f.endpoints, "etcd-endpoints", "", "etcd client URLs, comma separated, for --store etcd (TETHER_ETCD_ENDPOINTS)")
	fs.StringVar(&f.advertise, "advertise-url", "", "the URL other servers of a cluster (etcd or postgres) reach this one at (TETHER_ADVERTISE_URL, default http:// and the listen address)")
}
