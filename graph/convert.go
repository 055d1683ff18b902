package graph

import (
	"time"

	"github.com/tether-run/tether/internal/records"
)

func nodeOf(n *records.Node) *Node {
	out := &Node{
		Tenant: n.Tenant, ID: n.ID, Type: n.Type, Title: n.Title, Body: n.Body,
		Status: Status(n.Status), Queue: n.Queue, Priority: n.Priority, Target: n.Target,
		Labels: n.Labels, Props: n.Props, Attempts: n.Attempts, MaxAttempts: n.MaxAttempts,
		RunAt: n.RunAt, Parent: n.Parent, LastFence: n.LastFence, Result: n.Result,
		Version: n.Version, CreatedBy: n.CreatedBy, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt,
	}
	if n.Error != nil {
		out.Error = *n.Error
	}
	if l := n.Lease; l != nil {
		out.Lease = &Lease{
			Holder: l.By, Session: l.Session, Fence: l.Fence, TTL: time.Duration(l.TTLMS) * time.Millisecond,
			ClaimedAt: l.ClaimedAt, RenewedAt: l.RenewedAt, ExpiresAt: l.ExpiresAt,
		}
	}
	return out
}

func edgeOf(e *records.Edge) Edge {
	return Edge{From: e.From, Type: e.Type, To: e.To, Props: e.Props, CreatedBy: e.CreatedBy, CreatedAt: e.CreatedAt, RetiredAt: e.RetiredAt}
}

// str is a string prop, "" when absent or null.
func str(v any) string {
	s, _ := v.(string)
	return s
}

// fenceOf is a number prop as a fence: stored props decode as whichever
// integer type the codec chose.
func fenceOf(v any) uint64 {
	switch x := v.(type) {
	case uint64:
		return x
	case int64:
		return uint64(max(x, 0))
	case int:
		return uint64(max(x, 0))
	case uint32:
		return uint64(x)
	case float64:
		return uint64(max(x, 0))
	}
	return 0
}
