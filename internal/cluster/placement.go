package cluster

import "hash/fnv"

// ShardOfTenant is the shard of tenant t in a cluster of shards shards: an
// FNV-1a hash of the tenant id, fixed for the cluster's life.
func ShardOfTenant(t string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(t))
	return int(h.Sum32() % uint32(shards))
}

// Placement is where shard k goes among servers (their advertise URLs) when
// all of them are live: the one of highest rendezvous weight, ties to the
// lower URL. Operators (and tests) can tell from it which server a tenant's
// shard settles on.
func Placement(urls []string, k int) string {
	var best uint64
	var out string
	for _, u := range urls {
		w := weight(u, k)
		if out == "" || w > best || w == best && u < out {
			out, best = u, w
		}
	}
	return out
}
