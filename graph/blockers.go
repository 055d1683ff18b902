package graph

import (
	"bytes"
	"encoding/binary"

	"github.com/tether-run/tether/fault"
)

// Readiness bookkeeping. A node's blockers are its unmet depends_on targets
// and its unfinished children; their counts live in their own key (b|t|id), so
// a dependency finishing never rewrites its dependents' records. A queued node
// with no blocker has an entry in the ready index (r|t|queue|order|id), kept
// in the same transaction as every change that can move it, and mirrored in
// memory for claim-next (see readyMirror).

// OnFailIgnore is the depends_on prop value under which a dependency that
// ended without success still counts as satisfied.
const OnFailIgnore = "ignore"

// DependencySatisfied reports whether a depends_on edge e to a node in status
// st no longer blocks: the target is done, or ended with on_fail: ignore.
func DependencySatisfied(st Status, e *Edge) bool {
	return st == StatusDone || (st.Terminal() && e.Props["on_fail"] == OnFailIgnore)
}

// Blockers returns the unmet dependency and unfinished child counts of id.
func (tx *Tx) Blockers(tenant, id string) (deps, children int64, err error) {
	b, ok, err := tx.get(blockersKey(tenant, id))
	if err != nil || !ok || len(b) != 16 {
		return 0, 0, err
	}
	return int64(binary.BigEndian.Uint64(b[:8])), int64(binary.BigEndian.Uint64(b[8:])), nil
}

// addBlockers moves the counts of id by the deltas and re-evaluates its place
// in the ready index.
func (tx *Tx) addBlockers(tenant, id string, dDeps, dChildren int64) error {
	deps, children, err := tx.Blockers(tenant, id)
	if err != nil {
		return err
	}
	deps, children = max(0, deps+dDeps), max(0, children+dChildren)
	if deps == 0 && children == 0 {
		err = tx.del(blockersKey(tenant, id))
	} else {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], uint64(deps))
		binary.BigEndian.PutUint64(b[8:], uint64(children))
		err = tx.set(blockersKey(tenant, id), b[:])
	}
	if err != nil {
		return err
	}
	n, err := tx.NodeGet(tenant, id)
	if _, gone := err.(*fault.NotFound); gone {
		return nil
	}
	if err != nil {
		return err
	}
	return tx.syncReady(n, n)
}

// syncReady moves n's ready-index entry from where old had it (if it is
// there) to where n belongs now (if anywhere). The presence of old's entry is
// read, not derived, so a stale old copy can never leave an entry behind.
func (tx *Tx) syncReady(old, n *Node) error {
	var want []byte
	if n != nil && n.Status == StatusQueued && n.Queue != "" {
		deps, children, err := tx.Blockers(n.Tenant, n.ID)
		if err != nil {
			return err
		}
		if deps == 0 && children == 0 {
			want = readyKey(n.Tenant, n.Queue, n.order(), n.ID)
		}
	}
	if old != nil && old.Queue != "" {
		had := readyKey(old.Tenant, old.Queue, old.order(), old.ID)
		if !bytes.Equal(had, want) {
			ok, err := tx.exists(had)
			if err != nil {
				return err
			}
			if ok {
				if err := tx.del(had); err != nil {
					return err
				}
				tenant, queue, id := old.Tenant, old.Queue, old.ID
				tx.OnCommit(func() { tx.store.ready.remove(tenant, queue, id) })
			}
		}
	}
	if want == nil {
		return nil
	}
	var runAt int64
	if n.RunAt != nil {
		runAt = n.RunAt.UnixMilli()
	}
	if err := tx.set(want, putU64(uint64(runAt))); err != nil {
		return err
	}
	it := readyItem{id: n.ID, runAt: runAt, created: n.CreatedAt.UnixNano()}
	copy(it.order[:], n.order())
	tenant, queue := n.Tenant, n.Queue
	tx.OnCommit(func() { tx.store.ready.add(tenant, queue, it) })
	return nil
}

// propagateStatus adjusts the blockers of n's dependents and parent when n's
// status change satisfies or unsatisfies them.
func (tx *Tx) propagateStatus(old, n *Node) error {
	if old.Status == n.Status {
		return nil
	}
	// Most nodes have no dependents: a counter read spares the edge scan.
	var dependents []*Edge
	if count, err := tx.dependents(n.Tenant, n.ID); err != nil {
		return err
	} else if count > 0 {
		if dependents, err = tx.LiveEdges(n.Tenant, n.ID, EdgeDependsOn, DirIn); err != nil {
			return err
		}
	}
	for _, e := range dependents {
		before, after := DependencySatisfied(old.Status, e), DependencySatisfied(n.Status, e)
		if before == after {
			continue
		}
		delta := int64(1)
		if after {
			delta = -1
		}
		if err := tx.addBlockers(n.Tenant, e.From, delta, 0); err != nil {
			return err
		}
	}
	if n.Parent != "" && old.Status.Terminal() != n.Status.Terminal() {
		delta := int64(1)
		if n.Status.Terminal() {
			delta = -1
		}
		if err := tx.addBlockers(n.Tenant, n.Parent, 0, delta); err != nil {
			return err
		}
	}
	return nil
}

// dependents is how many live depends_on edges point at id.
func (tx *Tx) dependents(tenant, id string) (uint64, error) {
	b, ok, err := tx.get(dependentsKey(tenant, id))
	if err != nil || !ok || len(b) != 8 {
		return 0, err
	}
	return binary.BigEndian.Uint64(b), nil
}

// addDependents moves the dependents count of id by delta.
func (tx *Tx) addDependents(tenant, id string, delta int64) error {
	count, err := tx.dependents(tenant, id)
	if err != nil {
		return err
	}
	next := int64(count) + delta
	if next <= 0 {
		return tx.del(dependentsKey(tenant, id))
	}
	return tx.set(dependentsKey(tenant, id), putU64(uint64(next)))
}

// edgeBlocks reports whether the live edge e blocks its from-node, and how
// (as blocker deltas), given the current status of its to-node.
func (tx *Tx) edgeBlocks(tenant string, e *Edge) (dDeps, dChildren int64, err error) {
	if e.Type != EdgeDependsOn && e.Type != EdgeParentOf {
		return 0, 0, nil
	}
	to, err := tx.NodeGet(tenant, e.To)
	if _, gone := err.(*fault.NotFound); gone {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	switch {
	case e.Type == EdgeDependsOn && !DependencySatisfied(to.Status, e):
		return 1, 0, nil
	case e.Type == EdgeParentOf && !to.Status.Terminal():
		return 0, 1, nil
	}
	return 0, 0, nil
}
