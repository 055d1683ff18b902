package lifecycle

import (
	"fmt"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// ChildEnded applies the parent's on_child_fail when child has ended failed,
// dead or cancelled: with "fail" the parent fails (FailForChild) and its
// remaining children are cancelled; this repeats up the tree. It returns the
// ids it cancelled.
func ChildEnded(tx *graphstore.Tx, runs Runs, child *records.Node, by string) ([]string, error) {
	if child.Parent == "" || child.Status == records.StatusDone || !child.Status.Terminal() {
		return nil, nil
	}
	parent, err := tx.NodeGet(child.Tenant, child.Parent)
	if _, gone := err.(*fault.NotFound); gone {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if parent.Status.Terminal() || parent.OnChildFail != OnChildFailFail {
		return nil, nil
	}
	return FailForChild(tx, runs, parent, child, by)
}

// FailForChild fails parent because child ended without success: its run,
// if any, ends (outcome failed), its remaining children are cancelled, and
// its own parent is told (ChildEnded). It returns the ids it cancelled.
func FailForChild(tx *graphstore.Tx, runs Runs, parent, child *records.Node, by string) ([]string, error) {
	if err := check(OpFailForChild, parent, records.StatusFailed); err != nil {
		return nil, err
	}
	if err := runs.EndRun(tx, parent, OutcomeFailed, by); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("child %s ended %s", child.ID, child.Status)
	parent.Error = &msg
	parent.Status = records.StatusFailed
	if err := tx.NodePut(parent); err != nil {
		return nil, err
	}
	if err := tx.Emit(parent.Tenant, records.EventFailed, parent.ID, by, map[string]any{
		"error": msg, "child": child.ID, "requeue": false,
	}); err != nil {
		return nil, err
	}
	siblings, err := tx.LiveEdges(parent.Tenant, parent.ID, graphstore.EdgeParentOf, graphstore.DirOut)
	if err != nil {
		return nil, err
	}
	var cancelled []string
	for _, e := range siblings {
		sib, err := tx.NodeGet(parent.Tenant, e.To)
		if err != nil {
			return nil, err
		}
		if sib.Status.Terminal() {
			continue
		}
		ids, err := CancelTree(tx, runs, sib, by, "parent "+parent.ID+" failed")
		if err != nil {
			return nil, err
		}
		cancelled = append(cancelled, ids...)
	}
	up, err := ChildEnded(tx, runs, parent, by)
	return append(cancelled, up...), err
}
