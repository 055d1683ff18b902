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
	DryRun bool
	Reason string // requeue and cancel
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
	// Affected lists the nodes the action changed, in list order (cancel
	// also names the descendants and dependents it reached).
	Affected []string
	Failed   []BulkFailure
}

// Bulk applies an action to every node a filter selects, each node in a
// transaction of its own: a bulk is not atomic, and a node that changed
// since it was selected is refused as it would be on its own (a requeue of
// a node that is no longer failed, say) and reported in Failed. Identity
// nodes are never selected. The caller must be a dispatcher.
func (s *Service) Bulk(ctx context.Context, c Caller, p BulkParams) (BulkResult, error) {
	if !p.Action.Valid() {
		return BulkResult{}, fault.Invalidf("action", "must be requeue, cancel or delete")
	}
	if !c.Dispatcher {
		return BulkResult{}, &fault.Forbidden{Reason: "a bulk action needs the dispatcher or admin role"}
	}
	if p.Limit == 0 {
		p.Limit = BulkLimitDefault
	}
	if p.Limit < 1 || p.Limit > BulkLimitMax {
		return BulkResult{}, fault.Invalidf("limit", "must be an integer from 1 to %d", BulkLimitMax)
	}
	ids, truncated, err := s.selectAll(c.Tenant, p.Query, p.Ready, p.Limit)
	if err != nil {
		return BulkResult{}, err
	}
	res := BulkResult{Matched: len(ids), Truncated: truncated}
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
