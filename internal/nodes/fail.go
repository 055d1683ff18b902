package nodes

import (
	"context"
	"fmt"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// FailParams end a run that did not succeed.
type FailParams struct {
	leasing.HolderParams
	Error string
	// Requeue (the default) puts the node back in its queue while it has
	// attempts left; false ends it as failed.
	Requeue *bool
	// RetryIn delays the retry; nil takes the node's backoff.
	RetryIn *time.Duration
}

// MaxErrorLength bounds the error text kept on a node.
const MaxErrorLength = 64 << 10

// Fail ends the caller's run: back to queued (after RetryIn or the node's
// backoff) while attempts < max_attempts, else dead; failed when Requeue is
// false. A node that ends failed or dead fails its parent when the parent's
// on_child_fail is fail.
func (s *Service) Fail(ctx context.Context, p FailParams) (*records.Node, error) {
	if p.Error == "" {
		return nil, fault.Invalidf("error", "is required")
	}
	if len(p.Error) > MaxErrorLength {
		return nil, fault.Invalidf("error", "must be at most %d bytes", MaxErrorLength)
	}
	if p.RetryIn != nil && *p.RetryIn < 0 {
		return nil, fault.Invalidf("retry_in_ms", "must not be negative")
	}
	var out *records.Node
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(p.Tenant, p.NodeID)
		if err != nil {
			return err
		}
		out, err = s.FailTx(tx, n, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error failing node: %w", err)
	}
	return out, nil
}

// FailTx is Fail inside an open transaction.
func (s *Service) FailTx(tx *graphstore.Tx, n *records.Node, p FailParams) (*records.Node, error) {
	if err := leasing.CheckHolder(n, p.HolderParams, tx.Now()); err != nil {
		return nil, err
	}
	if err := lifecycle.Fail(tx, s.leases, n, lifecycle.FailParams{
		By: p.By, Error: p.Error, Requeue: p.Requeue == nil || *p.Requeue, RetryIn: p.RetryIn,
	}); err != nil {
		return nil, err
	}
	return n, nil
}
