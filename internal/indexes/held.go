package indexes

// The nodes an identity holds, for package message (a message to an
// identity reaches the nodes it holds), from the list indexes (lists.go).

// HeldNodeIDs returns the ids of the nodes of tenant whose lease names
// holder, in id order, as of the last commit: O(log n + held). A lease past
// its expiry counts until the reaper ends it, so a caller that must know
// whether holder holds a node now reads its record.
func (t *Table) HeldNodeIDs(tenant, holder string) []string {
	t.SyncLists()
	l := t.lists
	l.mu.RLock()
	defer l.mu.RUnlock()
	ti, ok := l.tenants[tenant]
	if !ok {
		return nil
	}
	tr, ok := ti.byHolder[atomOf(holder)]
	if !ok {
		return nil
	}
	ids := make([]string, 0, tr.Len())
	tr.Ascend(func(e *NodeEntry) bool {
		ids = append(ids, e.Ref.ID)
		return true
	})
	return ids
}
