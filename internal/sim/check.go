package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/records"
)

// check holds the system, idle between steps, to every invariant:
//   - nothing acknowledged is lost: an acknowledged create's node exists, an
//     acknowledged completion's node is done, and a lease stays live, with
//     its holder and fence, until the expiry its holder was last told;
//   - fences never go back: a node's stored last fence is never below one
//     granted or read before, across restarts;
//   - a node never runs more than max_attempts times;
//   - at most one live lease per node, in the derived state as in the
//     records: the held-lease index names each running node under its
//     holder only, as the records do, and the lease service's per-holder
//     counts agree;
//   - the derived state served equals one rebuilt from the records
//     (graphstore.CheckLive, tether check's logic).
func (r *runner) check() error {
	now := time.Now()
	recs := map[string]*records.Node{}
	err := r.w.store.View(func(tx *graphstore.Tx) error {
		for _, id := range r.m.ids {
			n, err := tx.NodeGet(tenant, id)
			var notFound *fault.NotFound
			if errors.As(err, &notFound) {
				continue
			}
			if err != nil {
				return err
			}
			recs[id] = n
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("error reading the nodes: %w", err)
	}
	held := map[string][]string{} // holder -> running nodes, from the records
	for _, id := range r.m.ids {
		n, rec := r.m.nodes[id], recs[id]
		if err := checkNode(n, rec, now); err != nil {
			return err
		}
		if rec != nil && rec.Lease != nil {
			held[rec.Lease.By] = append(held[rec.Lease.By], id)
		}
	}
	if err := r.checkHeld(held); err != nil {
		return err
	}
	rep, err := r.w.store.CheckLive()
	if err != nil {
		return fmt.Errorf("error checking the derived state: %w", err)
	}
	if len(rep.Problems) > 0 {
		return fmt.Errorf("the derived state differs from the records: %s", strings.Join(rep.Problems, "; "))
	}
	return nil
}

// checkNode holds one node's record (nil: none) to what the model was told.
func checkNode(n *nodeModel, rec *records.Node, now time.Time) error {
	if rec == nil {
		if n.created {
			return fmt.Errorf("%s: acknowledged create lost", n.id)
		}
		return nil
	}
	if n.done && rec.Status != records.StatusDone {
		return fmt.Errorf("%s: acknowledged completion lost: status %s", n.id, rec.Status)
	}
	if rec.LastFence < n.fence || rec.LastFence < n.seenFence {
		return fmt.Errorf("%s: last fence %d went back (granted %d, stored before %d)", n.id, rec.LastFence, n.fence, n.seenFence)
	}
	n.seenFence = rec.LastFence
	if rec.Attempts > rec.MaxAttempts {
		return fmt.Errorf("%s: %d attempts, max_attempts %d", n.id, rec.Attempts, rec.MaxAttempts)
	}
	if g := n.live(now); g != nil {
		l := rec.Lease
		if l == nil || l.By != g.holder || l.Fence != g.fence || !leasing.Live(rec, now) {
			return fmt.Errorf("%s: %s was told it holds fence %d until %v; the record holds %s", n.id, g.holder, g.fence, g.expires, leaseString(rec, now))
		}
	}
	return nil
}

func leaseString(rec *records.Node, now time.Time) string {
	l := rec.Lease
	if l == nil {
		return fmt.Sprintf("no lease (status %s, last fence %d)", rec.Status, rec.LastFence)
	}
	return fmt.Sprintf("%s's fence %d until %v (live %v)", l.By, l.Fence, l.ExpiresAt, leasing.Live(rec, now))
}

// checkHeld compares the derived held-lease index and the lease service's
// per-holder counts with the leases the records hold (held).
func (r *runner) checkHeld(held map[string][]string) error {
	holders := slices.Sorted(maps.Keys(held))
	for _, w := range workers {
		if _, ok := held[w]; !ok {
			holders = append(holders, w)
		}
	}
	seen := map[string]string{}
	return r.w.store.View(func(tx *graphstore.Tx) error {
		for _, h := range holders {
			ids := tx.HeldNodeIDs(tenant, h)
			want := slices.Sorted(slices.Values(held[h]))
			if !slices.Equal(slices.Sorted(slices.Values(ids)), want) {
				return fmt.Errorf("held index: %s holds %v, the records say %v", h, ids, want)
			}
			for _, id := range ids {
				if other, ok := seen[id]; ok {
					return fmt.Errorf("%s: two live leases in the derived state: %s and %s", id, other, h)
				}
				seen[id] = h
			}
			if c := r.w.leases.LiveCount(tenant, h); c != int64(len(want)) {
				return fmt.Errorf("lease counts: %s holds %d, the records say %d", h, c, len(want))
			}
		}
		return nil
	})
}
