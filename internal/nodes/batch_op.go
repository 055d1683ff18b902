package nodes

import (
	"encoding/json"
	"time"

	"github.com/tether-run/tether/internal/leasing"
)

// BatchKind is what one op of a batch does: the lease or lifecycle call it
// makes.
type BatchKind uint8

// The kinds of batch op. The zero BatchKind is none: a BatchOp not made by
// one of the constructors below.
const (
	BatchRenew    BatchKind = iota + 1 // leasing.Service.Renew
	BatchExtend                        // leasing.Service.Extend
	BatchRelease                       // leasing.Service.Release
	BatchComplete                      // Service.Complete
	BatchFail                          // Service.Fail
	BatchProgress                      // Service.Progress
)

// A BatchOp is one lease or lifecycle op on one node, as Batch runs it. It
// is made by RenewOp, ExtendOp, ReleaseOp, CompleteOp, FailOp or
// ProgressOp from the params of the call it stands for, and carries only
// those params: one struct for every kind, so that a batch of a thousand
// ops is one slice and no op is allocated on its own.
type BatchOp struct {
	kind   BatchKind
	holder leasing.HolderParams
	by     time.Duration // extend
	reason string        // release
	to     string        // release
	result json.RawMessage
	usage  map[string]float64 // complete, progress
	err    string             // fail
	// requeue and retryIn are fail's.
	requeue *bool
	retryIn *time.Duration
	// pct and message are progress's.
	pct     *float64
	message *string
}

// RenewOp is Renew of p's lease.
func RenewOp(p leasing.HolderParams) BatchOp {
	return BatchOp{kind: BatchRenew, holder: p}
}

// ExtendOp is Extend of p's lease by by.
func ExtendOp(p leasing.HolderParams, by time.Duration) BatchOp {
	return BatchOp{kind: BatchExtend, holder: p, by: by}
}

// ReleaseOp is Release with p.
func ReleaseOp(p leasing.ReleaseParams) BatchOp {
	return BatchOp{kind: BatchRelease, holder: p.HolderParams, reason: p.Reason, to: p.To}
}

// CompleteOp is Complete with p.
func CompleteOp(p CompleteParams) BatchOp {
	return BatchOp{kind: BatchComplete, holder: p.HolderParams, result: p.Result, usage: p.Usage}
}

// FailOp is Fail with p.
func FailOp(p FailParams) BatchOp {
	return BatchOp{kind: BatchFail, holder: p.HolderParams, err: p.Error, requeue: p.Requeue, retryIn: p.RetryIn}
}

// ProgressOp is Progress with p.
func ProgressOp(p ProgressParams) BatchOp {
	return BatchOp{kind: BatchProgress, holder: p.HolderParams, pct: p.Pct, message: p.Message, usage: p.Usage}
}

// Kind is what o does.
func (o BatchOp) Kind() BatchKind { return o.kind }

// NodeID is the node o acts on.
func (o BatchOp) NodeID() string { return o.holder.NodeID }

// as is the holder o acts as when c makes it: the caller's tenant and
// identity, whatever o's params said, and for the calls that allow it (a
// release, complete or fail, as their endpoints do) a dispatcher's override
// of another identity's lease.
func (o *BatchOp) as(c Caller) leasing.HolderParams {
	hp := o.holder
	hp.Tenant, hp.By = c.Tenant, c.Sub
	switch o.kind {
	case BatchRelease, BatchComplete, BatchFail:
		hp.Override = c.Dispatcher
	default:
		hp.Override = false
	}
	return hp
}

func (o *BatchOp) releaseParams(c Caller) leasing.ReleaseParams {
	return leasing.ReleaseParams{HolderParams: o.as(c), Reason: o.reason, To: o.to}
}

func (o *BatchOp) completeParams(c Caller) CompleteParams {
	return CompleteParams{HolderParams: o.as(c), Result: o.result, Usage: o.usage}
}

func (o *BatchOp) failParams(c Caller) FailParams {
	return FailParams{HolderParams: o.as(c), Error: o.err, Requeue: o.requeue, RetryIn: o.retryIn}
}

func (o *BatchOp) progressParams(c Caller) ProgressParams {
	return ProgressParams{HolderParams: o.as(c), Pct: o.pct, Message: o.message, Usage: o.usage}
}
