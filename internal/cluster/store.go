package cluster

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/kv"
)

// openShardStore opens shard k's kv store on etcd, under the cluster's
// prefix s/NN/; every write carries guard, and onDeposed runs once when the
// guard fails.
func openShardStore(n *Node, k int, guard []clientv3.Cmp, onDeposed func()) (*kv.Store, error) {
	return kv.OpenEtcd(kv.EtcdOptions{
		Client:    n.cfg.Client,
		Prefix:    n.cfg.Prefix + "s/" + shardName(k) + "/",
		Guard:     guard,
		OnDeposed: onDeposed,
		MaxTxnOps: n.cfg.MaxTxnOps,
		Pipeline:  n.cfg.Pipeline,
		Batcher:   n.batcher,
		Logger:    n.log.With("shard", k),
	})
}
