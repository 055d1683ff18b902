package cluster

import (
	"net/url"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/kv"
)

// openShardStore opens shard k's kv store, every write of which carries
// guard; onDeposed runs once when the guard fails.
//
// The etcd engine (kv.OpenEtcd) is being written alongside this package.
// When it is merged this function becomes:
//
//	return kv.OpenEtcd(kv.EtcdOptions{
//		Client:    n.cfg.Client,
//		Prefix:    n.cfg.Prefix + "s/" + shardName(k) + "/",
//		Guard:     guard,
//		OnDeposed: onDeposed,
//		Logger:    n.log.With("shard", k),
//	})
//
// TEMPORARY (until kv.OpenEtcd exists): a Badger store in a directory per
// (prefix, shard) under the system's temporary directory, shared by every
// server of this machine, so that elections, routing, forwarding and
// takeover can be tested now. It does not enforce guard: Badger's directory
// lock is what keeps a second owner out until the first has closed. Not
// for production: it is neither shared between machines nor cleaned up.
func openShardStore(n *Node, k int, guard []clientv3.Cmp, onDeposed func()) (*kv.Store, error) {
	_, _ = guard, onDeposed
	dir := filepath.Join(temporaryStoreRoot(n.cfg.Prefix), shardName(k))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return kv.Open(kv.Options{Dir: dir, Logger: n.log.With("shard", k)})
}

// temporaryStore says openShardStore is the TEMPORARY Badger one (tests of
// what only the etcd engine does are skipped); it goes with it.
const temporaryStore = true

// temporaryStoreRoot is where openShardStore's TEMPORARY Badger stores of
// the cluster at prefix live.
func temporaryStoreRoot(prefix string) string {
	return filepath.Join(os.TempDir(), "tether-cluster-TEMPORARY", url.PathEscape(prefix))
}
