package lease

import (
	"errors"
	"fmt"
	"time"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/internal/fault"
)

var (
	// ErrLeaseLost is matched by an act on a lease that is no longer live:
	// it expired, was released, or another claim (a later fence) holds the
	// node. Its error is a *LeaseLostError.
	ErrLeaseLost = errors.New("lease lost")
	// ErrHeld is matched by a claim of a node another worker holds. Its
	// error is a *HeldError.
	ErrHeld = errors.New("node is held by another worker")
	// ErrNotClaimable is matched by a claim of a node that may not run now
	// (finished, blocked by dependencies, delayed). Its error is a
	// *NotClaimableError.
	ErrNotClaimable = errors.New("node is not claimable")
	// ErrNoneReady is ClaimNext's answer when no node of the queue is ready
	// (after Wait, when one was given).
	ErrNoneReady = errors.New("no node ready")
	// ErrTooManyLeases is matched by a claim beyond the tenant's
	// MaxLeasesPerWorker.
	ErrTooManyLeases = errors.New("too many leases")
	// ErrForbidden is matched by an act the caller may not do (a claim of a
	// node targeted at another worker, say).
	ErrForbidden = errors.New("forbidden")
	// ErrClosed is matched by a call on a closed Store.
	ErrClosed = errors.New("store closed")
)

// A node that does not exist matches graph.ErrNotFound, and an argument
// that breaks a rule graph.ErrInvalid.

// LeaseLostError is a lease that is no longer live.
type LeaseLostError struct {
	NodeID string
	// Holder is who holds the node now ("" when nobody does).
	Holder string
	Reason string
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("lease on node %q lost: %s", e.NodeID, e.Reason)
}

// Is makes a *LeaseLostError match ErrLeaseLost.
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost }

// HeldError is a claim of a node another worker holds.
type HeldError struct {
	NodeID    string
	Holder    string
	ExpiresAt time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("node %q is held by %q until %s", e.NodeID, e.Holder, e.ExpiresAt.Format(time.RFC3339Nano))
}

// Is makes a *HeldError match ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// NotClaimableError is a claim of a node that may not run now.
type NotClaimableError struct {
	NodeID string
	// Reason is "terminal", "blocked" or "delayed".
	Reason    string
	Status    graph.Status
	BlockedBy []string
	RunAt     *time.Time
}

func (e *NotClaimableError) Error() string {
	return fmt.Sprintf("node %q is not claimable: %s (status %s)", e.NodeID, e.Reason, e.Status)
}

// Is makes a *NotClaimableError match ErrNotClaimable.
func (e *NotClaimableError) Is(target error) bool { return target == ErrNotClaimable }

// translate maps the services' errors to this package's: the one place
// they are told apart. nodeID names the node the call was about.
func translate(nodeID string, err error) error {
	var (
		lost  *fault.LeaseLost
		held  *fault.Conflict
		nc    *fault.NotClaimable
		nf    *fault.NotFound
		inv   *fault.Invalid
		rl    *fault.RateLimited
		forb  *fault.Forbidden
		cycle *fault.Cycle
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &lost):
		return &LeaseLostError{NodeID: nodeID, Holder: lost.Holder, Reason: lost.Reason}
	case errors.As(err, &held):
		return &HeldError{NodeID: nodeID, Holder: held.Holder, ExpiresAt: held.ExpiresAt}
	case errors.As(err, &nc):
		return &NotClaimableError{NodeID: nodeID, Reason: nc.Reason, Status: graph.Status(nc.Status), BlockedBy: nc.BlockedBy, RunAt: nc.RunAt}
	case errors.As(err, &nf):
		return fmt.Errorf("%w: %s", graph.ErrNotFound, nf)
	case errors.As(err, &inv):
		return fmt.Errorf("%w: %s", graph.ErrInvalid, inv)
	case errors.As(err, &cycle):
		return fmt.Errorf("%w: %s", graph.ErrInvalid, cycle)
	case errors.As(err, &rl):
		return fmt.Errorf("%w: %s", ErrTooManyLeases, rl.Reason)
	case errors.As(err, &forb):
		return fmt.Errorf("%w: %s", ErrForbidden, forb.Reason)
	}
	return err
}
