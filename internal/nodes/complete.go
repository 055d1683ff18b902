package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// CompleteParams finish a run.
type CompleteParams struct {
	leasing.HolderParams
	Result json.RawMessage
	Usage  map[string]float64
}

// Complete ends the caller's run with status done. Retrying a completion that
// already succeeded (same identity, and the same fence when one is given)
// answers with the node again and changes nothing.
func (s *Service) Complete(ctx context.Context, p CompleteParams) (*records.Node, error) {
	if err := validUsage(p.Usage); err != nil {
		return nil, err
	}
	var out *records.Node
	err := s.store.Update(ctx, func(tx *graphstore.Tx) (err error) {
		out, err = s.completeIn(tx, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error completing node: %w", err)
	}
	return out, nil
}

// completeIn is Complete's work inside tx: the node read, then CompleteTx.
func (s *Service) completeIn(tx *graphstore.Tx, p CompleteParams) (*records.Node, error) {
	n, err := tx.NodeGet(p.Tenant, p.NodeID)
	if err != nil {
		return nil, err
	}
	return s.CompleteTx(tx, n, p)
}

// CompleteTx is Complete inside an open transaction.
func (s *Service) CompleteTx(tx *graphstore.Tx, n *records.Node, p CompleteParams) (*records.Node, error) {
	if n.Status == records.StatusDone && n.LastRun != nil && n.LastRun.Outcome == leasing.OutcomeDone &&
		n.LastRun.By == p.By && (p.Fence == 0 || p.Fence == n.LastRun.Fence) {
		return n, nil
	}
	if err := leasing.CheckHolder(n, p.HolderParams, tx.Now()); err != nil {
		return nil, err
	}
	if err := lifecycle.Complete(tx, s.leases, n, lifecycle.CompleteParams{By: p.By, Result: p.Result, Usage: p.Usage}); err != nil {
		return nil, err
	}
	return n, nil
}

func validUsage(u map[string]float64) error {
	for k, v := range u {
		if k == "" || len(k) > 128 {
			return fault.Invalidf("usage", "keys must be 1-128 characters")
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fault.Invalidf("usage."+k, "must be a finite number")
		}
	}
	return nil
}
