package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/tether-run/tether/internal/fault"
)

// apply folds an operation's answer into the model, and checks the answer
// against what the model was told before: a grant while another lease was
// told live, a fence not above every earlier one, a refusal to a holder
// whose lease was told live.
func (r *runner) apply(op *operation, err error) error {
	n := op.node
	switch {
	case err == nil:
		r.res.Acked++
		r.logf("%v: ok%s", op, leaseText(op))
	case unanswered(err):
		r.logf("%v: unanswered (%v)", op, err)
		return r.unanswered(op)
	default:
		r.logf("%v: refused (%v)", op, err)
		return r.refused(op, err)
	}
	now := time.Now()
	switch op.kind {
	case "create":
		n.created = true
	case "claim", "renew":
		l := op.claimed
		if op.renewed {
			if n.lease == nil || n.lease.holder != op.worker || n.lease.fence != l.Fence {
				// A renewal of a lease its holder was not told of (a
				// claim unanswered, then renewed): it is told now.
				n.lease = &grant{holder: op.worker, fence: l.Fence}
			}
			// A renewal is now + the lease's TTL: never earlier than the
			// expiry told before (a claim's renewal may ask a shorter TTL).
			if op.kind == "renew" && l.ExpiresAt.Before(n.lease.expires) {
				return fmt.Errorf("%s: renewed to %v, before the expiry %v its holder was told", n.id, l.ExpiresAt, n.lease.expires)
			}
			n.lease.expires = l.ExpiresAt
			return nil
		}
		if g := n.live(l.ClaimedAt); g != nil {
			return fmt.Errorf("%s: two live leases: granted to %s (fence %d) at %v while %s holds fence %d until %v",
				n.id, op.worker, l.Fence, l.ClaimedAt, g.holder, g.fence, g.expires)
		}
		if l.Fence <= n.fence || l.Fence <= n.seenFence {
			return fmt.Errorf("%s: fence %d granted, not above the last granted %d nor the last stored %d", n.id, l.Fence, n.fence, n.seenFence)
		}
		n.fence, n.grants = l.Fence, n.grants+1
		n.lease = &grant{holder: op.worker, fence: l.Fence, expires: l.ExpiresAt}
		if n.grants-n.releases > n.maxAttempts {
			return fmt.Errorf("%s: %d leases granted, %d released, max_attempts %d", n.id, n.grants, n.releases, n.maxAttempts)
		}
	case "release":
		// It gave an attempt back if the caller held a lease, which the
		// model may not know (after an unanswered claim or completion):
		// count it unless another holder's lease was told live.
		if g := n.live(now); g == nil || g.holder == op.worker {
			n.releases++
		}
		if n.lease != nil && n.lease.holder == op.worker {
			n.lease = nil
		}
	case "complete":
		if g := n.live(now); g != nil && g.holder != op.worker {
			return fmt.Errorf("%s: completed by %s while %s was told it holds fence %d until %v", n.id, op.worker, g.holder, g.fence, g.expires)
		}
		n.done, n.lease = true, nil
	}
	return nil
}

// unanswered: the write may or may not have survived. A client that heard
// nothing of its complete or release no longer relies on its lease; one
// that heard nothing of its re-claim relies on it only as long as the
// re-claim's TTL would give (it may have asked a shorter one).
func (r *runner) unanswered(op *operation) error {
	n := op.node
	switch op.kind {
	case "create":
		n.maybe = true
	case "claim":
		if n.lease != nil && n.lease.holder == op.worker {
			if end := op.at.Add(effectiveTTL(op.ttl)); end.Before(n.lease.expires) {
				n.lease.expires = end
			}
		}
	case "release", "complete":
		if g := n.live(time.Now()); op.kind == "release" && (g == nil || g.holder == op.worker) {
			n.releases++
		}
		if n.lease != nil && n.lease.holder == op.worker {
			n.lease = nil
		}
	}
	return nil
}

// refused: nothing changed. A refusal is wrong when it denies what the
// model was told: that the node exists, or that the caller's lease is
// live.
func (r *runner) refused(op *operation, err error) error {
	n := op.node
	var notFound *fault.NotFound
	if n.created && errors.As(err, &notFound) {
		return fmt.Errorf("%s: acknowledged create lost: %v", n.id, err)
	}
	now := time.Now()
	if g := n.live(now); g != nil && g.holder == op.worker && op.fence == g.fence && op.kind != "create" {
		var lost *fault.LeaseLost
		if errors.As(err, &lost) {
			return fmt.Errorf("%s: %s refused to %s, told it holds fence %d until %v: %v", n.id, op.kind, op.worker, g.fence, g.expires, err)
		}
	}
	return nil
}

// effectiveTTL is the TTL a claim asking ttl gets: the tenant default for
// none, at most the tenant maximum.
func effectiveTTL(ttl time.Duration) time.Duration {
	if ttl == 0 {
		return ttlDefault
	}
	return min(ttl, ttlMax)
}

func leaseText(op *operation) string {
	if op.claimed == nil {
		return ""
	}
	return fmt.Sprintf(" (fence %d until %s, renewed %v)", op.claimed.Fence, op.claimed.ExpiresAt.UTC().Format("15:04:05.000000"), op.renewed)
}
