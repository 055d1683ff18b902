package cluster

import (
	"context"
	"hash/fnv"
	"time"
)

// owner is the elected owner of a shard.
type owner struct {
	id  string // the owner's server id
	url string // the owner's advertise URL
	rev int64  // the owner's term (etcd: the election key's create revision)
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

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
