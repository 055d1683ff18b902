package cluster

import (
	"context"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// owner is the elected owner of a shard: the election key of lowest create
// revision.
type owner struct {
	id  string // the owner's server id (its lease id in hex)
	url string // the owner's advertise URL (the election value)
	rev int64  // the election key's create revision
}

// view is what this server knows of the cluster: the live members and every
// shard's owner. A view is never changed once published; changed is closed
// when a newer one replaces it.
type view struct {
	members map[string]string // id -> advertise URL; one id per URL, its newest session
	// leaving are the members that are stopping (Shutdown): they still
	// serve what they own until they hand it over, but are nobody's desired
	// owner.
	leaving map[string]bool
	owners  []owner // by shard; id "" when none
	// orphanSince is when this server first saw shard k without an owner
	// (zero when it has one).
	orphanSince []time.Time
	changed     chan struct{}
}

// desired is the live member, not leaving, of highest rendezvous weight
// for shard k: its id and URL ("" when there is none).
func (v *view) desired(k int) (id, url string) {
	urls := make([]string, 0, len(v.members))
	for mid, u := range v.members {
		if !v.leaving[mid] {
			urls = append(urls, u)
		}
	}
	url = Placement(urls, k)
	for mid, u := range v.members {
		if u == url {
			return mid, url
		}
	}
	return "", ""
}

// weight is the rendezvous weight of a member (by its advertise URL, which
// outlives its sessions) for shard k.
func weight(url string, k int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(url))
	_, _ = h.Write([]byte{0, byte(k)})
	return mix(h.Sum64())
}

// mix is splitmix64's finaliser: fnv's low bits alone spread poorly over
// the few members of a cluster.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// view is the current view.
func (n *Node) view() *view {
	n.viewMu.Lock()
	defer n.viewMu.Unlock()
	return n.cur
}

// publish replaces the view with one changed by edit. A shard opened or
// closed here publishes an unchanged view: what waits on views waits on
// that too.
func (n *Node) publish(edit func(v *view)) {
	n.viewMu.Lock()
	defer n.viewMu.Unlock()
	old := n.cur
	v := &view{members: old.members, leaving: old.leaving, owners: old.owners, orphanSince: old.orphanSince, changed: make(chan struct{})}
	edit(v)
	now := time.Now()
	since := make([]time.Time, len(v.owners))
	for k, o := range v.owners {
		switch {
		case o.id != "":
		case old.orphanSince[k].IsZero():
			since[k] = now
		default:
			since[k] = old.orphanSince[k]
		}
	}
	v.orphanSince = since
	n.cur = v
	close(old.changed)
}

// waitFor waits until cond holds of the view, or ctx ends (false). cond may
// name a time at which to look again although the view did not change.
func (n *Node) waitFor(ctx context.Context, cond func(v *view) (ok bool, again time.Time)) bool {
	for {
		v := n.view()
		ok, again := cond(v)
		if ok {
			return true
		}
		var timer <-chan time.Time
		if !again.IsZero() {
			t := time.NewTimer(time.Until(again))
			timer = t.C
			defer t.Stop()
		}
		select {
		case <-ctx.Done():
			return false
		case <-v.changed:
		case <-timer:
		}
	}
}

// watchMembers keeps the view's members up to date until ctx ends.
func (n *Node) watchMembers(ctx context.Context) {
	n.watch(ctx, n.cfg.Prefix+"members/", func(resp *clientv3.GetResponse) {
		// Of the members of one URL only the newest counts: an older one is
		// a session of the same server that ended, its lease not expired yet
		// (etcd had no quorum to expire or revoke it).
		members := map[string]string{}
		newest := map[string]int64{} // URL -> create revision
		for _, kv := range resp.Kvs {
			u := string(kv.Value)
			if rev, ok := newest[u]; ok && rev > kv.CreateRevision {
				continue
			}
			for id, mu := range members {
				if mu == u {
					delete(members, id)
				}
			}
			newest[u] = kv.CreateRevision
			members[strings.TrimPrefix(string(kv.Key), n.cfg.Prefix+"members/")] = u
		}
		n.publish(func(v *view) { v.members = members })
	})
}

// watchLeaving keeps the view's leaving members up to date until ctx ends.
func (n *Node) watchLeaving(ctx context.Context) {
	pfx := n.cfg.Prefix + "leaving/"
	n.watch(ctx, pfx, func(resp *clientv3.GetResponse) {
		leaving := map[string]bool{}
		for _, kv := range resp.Kvs {
			leaving[strings.TrimPrefix(string(kv.Key), pfx)] = true
		}
		n.publish(func(v *view) { v.leaving = leaving })
	})
}

// watchOwners keeps the view's shard owners up to date until ctx ends.
func (n *Node) watchOwners(ctx context.Context) {
	pfx := n.cfg.Prefix + "shards/"
	n.watch(ctx, pfx, func(resp *clientv3.GetResponse) {
		owners := make([]owner, n.cfg.Shards)
		for _, kv := range resp.Kvs {
			// shards/NN/owner/<id>
			parts := strings.Split(strings.TrimPrefix(string(kv.Key), pfx), "/")
			if len(parts) != 3 || parts[1] != "owner" {
				continue
			}
			k, err := strconv.Atoi(parts[0])
			if err != nil || k < 0 || k >= n.cfg.Shards {
				continue
			}
			if o := owners[k]; o.id == "" || kv.CreateRevision < o.rev {
				owners[k] = owner{id: parts[2], url: string(kv.Value), rev: kv.CreateRevision}
			}
		}
		n.publish(func(v *view) { v.owners = owners })
	})
}

// watch calls apply with every key under prefix, read at once and again
// after each change (a watch is only the signal to read again: the few keys
// of members and elections are cheap to read, and a read after a lost or
// compacted watch is always right), until ctx ends.
func (n *Node) watch(ctx context.Context, prefix string, apply func(*clientv3.GetResponse)) {
	for ctx.Err() == nil {
		resp, err := n.cfg.Client.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			if ctx.Err() == nil {
				n.log.Warn("error reading the cluster's keys; retrying", "prefix", prefix, "err", err)
				sleep(ctx, 200*time.Millisecond)
			}
			continue
		}
		apply(resp)
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := n.cfg.Client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		for wr := range wch {
			if wr.Err() != nil {
				break
			}
			if len(wr.Events) > 0 {
				// Read again; drain what else queued up first.
				break
			}
		}
		cancel()
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
