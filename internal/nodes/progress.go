package nodes

import (
	"context"
	"fmt"
	"math"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// ProgressParams report progress of a running node.
type ProgressParams struct {
	leasing.HolderParams
	Pct     *float64
	Message *string
	Usage   map[string]float64
}

// ProgressResult is the node and its renewed lease.
type ProgressResult struct {
	Node  *records.Node
	Lease *records.Lease
}

// Progress records the holder's progress and renews its lease: activity is a
// heartbeat.
func (s *Service) Progress(ctx context.Context, p ProgressParams) (*ProgressResult, error) {
	if p.Pct != nil && (math.IsNaN(*p.Pct) || *p.Pct < 0 || *p.Pct > 100) {
		return nil, fault.Invalidf("pct", "must be a number from 0 to 100")
	}
	if p.Message != nil && len(*p.Message) > 4096 {
		return nil, fault.Invalidf("message", "must be at most 4096 bytes")
	}
	if err := validUsage(p.Usage); err != nil {
		return nil, err
	}
	var out *ProgressResult
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(p.Tenant, p.NodeID)
		if err != nil {
			return err
		}
		out, err = s.ProgressTx(tx, n, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error recording progress: %w", err)
	}
	return out, nil
}

// ProgressTx is Progress inside an open transaction.
func (s *Service) ProgressTx(tx *graphstore.Tx, n *records.Node, p ProgressParams) (*ProgressResult, error) {
	res, err := s.leases.RenewTx(tx, n, p.HolderParams)
	if err != nil {
		return nil, err
	}
	prog := &records.Progress{UpdatedAt: tx.Now().UTC()}
	if n.Progress != nil {
		*prog = *n.Progress
		prog.UpdatedAt = tx.Now().UTC()
	}
	if p.Pct != nil {
		prog.Pct = p.Pct
	}
	if p.Message != nil {
		prog.Message = *p.Message
	}
	n.Progress = prog
	lifecycle.AddUsage(n, p.Usage)
	if err := tx.FlowSpend(n, p.Usage); err != nil {
		return nil, err
	}
	if err := tx.NodePut(n); err != nil {
		return nil, err
	}
	data := map[string]any{"fence": n.Lease.Fence}
	if p.Pct != nil {
		data["pct"] = *p.Pct
	}
	if p.Message != nil {
		data["message"] = *p.Message
	}
	if len(p.Usage) > 0 {
		data["usage"] = p.Usage
	}
	if err := tx.Emit(n.Tenant, records.EventProgress, n.ID, p.By, data); err != nil {
		return nil, err
	}
	if err := lifecycle.RollUp(tx, n, p.Usage); err != nil {
		return nil, err
	}
	return &ProgressResult{Node: n, Lease: res.Lease}, nil
}
