package nodes

import (
	"context"
	"fmt"
	"sync"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

// BulkAction is what a bulk request does to every node its filter selects.
type BulkAction string

const (
	BulkRequeue BulkAction = "requeue"
	BulkCancel  BulkAction = "cancel"
	BulkDelete  BulkAction = "delete"
)

// Valid reports whether a is a known action.
func (a BulkAction) Valid() bool {
	return a == BulkRequeue || a == BulkCancel || a == BulkDelete
}

// Bulk limits: how many nodes one request may touch, by default and at most.
const (
	BulkLimitDefault = 1000
	BulkLimitMax     = 10000
	// bulkParallel is how many of a bulk's transactions are in flight at
	// once: enough to share the store's group commits, few enough to leave
	// the writer to other requests in between.
	bulkParallel = 16
)

// BulkParams is one bulk request: the nodes Query selects (every page of
// it, up to Limit), what to do to each, and whether only to count them.
type BulkParams struct {
	Action BulkAction
	Query  graphstore.NodeQuery
	Ready  *bool
	Limit  int
	// IDs, when set, are the nodes a dry run selected and a person
	// confirmed: the action touches only those of them the query still
	// selects, and reports the rest as skipped, so nothing that arrived
	// after the confirmation is touched. At most BulkLimitMax, no repeats.
	IDs    []string
	DryRun bool
	Reason string // requeue and cancel, at most MaxReasonLength bytes
	Force  bool   // delete: end a running node's lease
}

// BulkFailure is a node the action was refused for, and why.
type BulkFailure struct {
	ID  string
	Err error
}

// BulkResult says what a bulk request selected and did.
type BulkResult struct {
	// Matched is how many nodes the filter selected (at most Limit);
	// Truncated says more matched beyond Limit, untouched.
	Matched   int
	Truncated bool
	// Selected lists the nodes selected, in list order (in the order of
	// IDs when given): what a confirmation sends back as IDs.
	Selected []string
	// Skipped lists the IDs the query no longer selects (changed, deleted,
	// or never matching), untouched.
	Skipped []string
	// Affected lists the nodes the action changed, in list order (cancel
	// also names the descendants and dependents it reached).
	Affected []string
	Failed   []BulkFailure
}

// Bulk applies an action to every node a filter selects, each node in a
// transaction of its own: a bulk is not atomic, and a node that changed
// since it was selected is refused as it would be on its own (a requeue of
// a node that is no longer failed, say) and reported in Failed. Identity
// nodes are never selected: a query for their type is refused. The caller
// must be a dispatcher.
func (s *Service) Bulk(ctx context.Context, c Caller, p BulkParams) (BulkResult, error) {
	if err := p.validate(); err != nil {
		return BulkResult{}, err
	}
	if !c.Dispatcher {
		return BulkResult{}, &fault.Forbidden{Reason: "a bulk action needs the dispatcher or admin role"}
	}
	if p.Limit == 0 {
		p.Limit = BulkLimitDefault
	}
	var res BulkResult
	var err error
	if p.IDs != nil {
		res, err = s.selectNamed(c.Tenant, p.Query, p.Ready, p.IDs)
	} else {
		res.Selected, res.Truncated, err = s.selectAll(c.Tenant, p.Query, p.Ready, p.Limit)
	}
	if err != nil {
		return BulkResult{}, err
	}
	ids := res.Selected
	res.Matched = len(ids)
	if p.DryRun || len(ids) == 0 {
		return res, nil
	}

	affected := make([][]string, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, bulkParallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			affected[i], errs[i] = s.bulkOne(ctx, c, p, id)
		}()
	}
	wg.Wait()
	for i, id := range ids {
		if errs[i] != nil {
			res.Failed = append(res.Failed, BulkFailure{ID: id, Err: errs[i]})
			continue
		}
		res.Affected = append(res.Affected, affected[i]...)
	}
	return res, nil
}

func (p BulkParams) validate() error {
	switch {
	case !p.Action.Valid():
		return fault.Invalidf("action", "must be requeue, cancel or delete")
	case p.Limit != 0 && (p.Limit < 1 || p.Limit > BulkLimitMax):
		return fault.Invalidf("limit", "must be an integer from 1 to %d", BulkLimitMax)
	case p.Query.Type == graphstore.IdentityType:
		return fault.Invalidf("filter.type", "identity nodes are never selected by a bulk action")
	case len(p.IDs) > BulkLimitMax:
		return fault.Invalidf("ids", "must name at most %d nodes", BulkLimitMax)
	}
	if err := checkReason(p.Reason); err != nil {
		return err
	}
	seen := make(map[string]bool, len(p.IDs))
	for _, id := range p.IDs {
		if !graphstore.ValidID(id) {
			return fault.Invalidf("ids", "%q is not a valid node id", id)
		}
		if seen[id] {
			return fault.Invalidf("ids", "names %q twice", id)
		}
		seen[id] = true
	}
	return nil
}

// selectNamed keeps the ids that the query selects, in one snapshot, and
// reports the others as skipped.
func (s *Service) selectNamed(tenant string, q graphstore.NodeQuery, ready *bool, ids []string) (BulkResult, error) {
	res := BulkResult{Selected: []string{}, Skipped: []string{}}
	err := s.store.View(func(tx *graphstore.Tx) error {
		for _, id := range ids {
			ok, err := selects(tx, tenant, q, ready, id)
			if err != nil {
				return err
			}
			if ok {
				res.Selected = append(res.Selected, id)
			} else {
				res.Skipped = append(res.Skipped, id)
			}
		}
		return nil
	})
	return res, err
}

// selects reports whether node id is one the list of q and ready shows.
func selects(tx *graphstore.Tx, tenant string, q graphstore.NodeQuery, ready *bool, id string) (bool, error) {
	n, err := tx.NodeGet(tenant, id)
	if _, gone := err.(*fault.NotFound); gone {
		return false, nil
	}
	if err != nil || n.Type == graphstore.IdentityType {
		return false, err
	}
	if ok, err := tx.NodeMatches(n, q); err != nil || !ok {
		return false, err
	}
	if ready == nil {
		return true, nil
	}
	r, err := ReadinessTx(tx, n)
	return r.Ready == *ready, err
}

// selectAll lists every node of the query, up to limit, in list order, and
// whether more matched.
func (s *Service) selectAll(tenant string, q graphstore.NodeQuery, ready *bool, limit int) ([]string, bool, error) {
	var ids []string
	q.Cursor = ""
	for {
		q.Limit = min(1000, limit+1-len(ids))
		views, next, err := s.List(tenant, q, ready)
		if err != nil {
			return nil, false, err
		}
		for _, v := range views {
			ids = append(ids, v.Node.ID)
		}
		if len(ids) > limit {
			return ids[:limit], true, nil
		}
		if next == "" {
			return ids, false, nil
		}
		q.Cursor = next
	}
}

func (s *Service) bulkOne(ctx context.Context, c Caller, p BulkParams, id string) ([]string, error) {
	switch p.Action {
	case BulkRequeue:
		if _, err := s.Requeue(ctx, c, id, p.Reason); err != nil {
			return nil, err
		}
		return []string{id}, nil
	case BulkCancel:
		return s.Cancel(ctx, c, id, p.Reason)
	case BulkDelete:
		if err := s.Delete(ctx, c, id, p.Force); err != nil {
			return nil, err
		}
		return []string{id}, nil
	}
	return nil, fmt.Errorf("unknown bulk action %q", p.Action)
}
