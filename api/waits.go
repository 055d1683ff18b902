package api

import (
	"fmt"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/tenancy"
	"github.com/tether-run/tether/internal/testsignal"
)

// Default caps on long polls, event streams and MCP sessions and streams open
// at once.
const (
	DefaultWaitsPerIdentity = 256
	DefaultWaitsPerTenant   = 1024
)

// WaitLimits cap the requests that wait (claim-next and claims with
// wait_ms > 0, the event long poll, event streams) and the MCP sessions and
// their standalone streams (HoldWait) open at once: each costs a goroutine
// and its buffers for as long as it lives. Zero is the default;
// a negative value is no cap.
type WaitLimits struct {
	PerIdentity int // TETHER_MAX_WAITS_PER_IDENTITY
	PerTenant   int // TETHER_MAX_WAITS_PER_TENANT
}

func (l WaitLimits) withDefaults() WaitLimits {
	if l.PerIdentity == 0 {
		l.PerIdentity = DefaultWaitsPerIdentity
	}
	if l.PerTenant == 0 {
		l.PerTenant = DefaultWaitsPerTenant
	}
	return l
}

// waiters counts the waiting requests of each identity and tenant.
type waiters struct {
	lim        WaitLimits
	waiting    *testsignal.Signal[string] // the Server's TestSignals.Waiting
	mu         sync.Mutex
	byTenant   map[string]int
	byIdentity map[waiterKey]int
}

type waiterKey struct{ tenant, sub string }

func newWaiters(l WaitLimits, waiting *testsignal.Signal[string]) *waiters {
	return &waiters{lim: l.withDefaults(), waiting: waiting, byTenant: map[string]int{}, byIdentity: map[waiterKey]int{}}
}

// acquire counts one more waiting request of p, or refuses it with a
// *fault.RateLimited naming the cap it would pass. The caller calls release
// once it stops waiting.
func (w *waiters) acquire(p *tenancy.Principal) (release func(), err error) {
	k := waiterKey{p.Tenant, p.Subject}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lim.PerIdentity > 0 && w.byIdentity[k] >= w.lim.PerIdentity {
		return nil, &fault.RateLimited{
			Reason:     fmt.Sprintf("%s has %d long polls, event streams and MCP sessions and streams open, the most one identity may (TETHER_MAX_WAITS_PER_IDENTITY)", p.Subject, w.lim.PerIdentity),
			RetryAfter: time.Second,
		}
	}
	if w.lim.PerTenant > 0 && w.byTenant[k.tenant] >= w.lim.PerTenant {
		return nil, &fault.RateLimited{
			Reason:     fmt.Sprintf("tenant %s has %d long polls, event streams and MCP sessions and streams open, the most one tenant may (TETHER_MAX_WAITS_PER_TENANT)", p.Tenant, w.lim.PerTenant),
			RetryAfter: time.Second,
		}
	}
	w.byIdentity[k]++
	w.byTenant[k.tenant]++
	w.waiting.Signal(p.Subject)
	return func() { w.release(k) }, nil
}

func (w *waiters) release(k waiterKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byIdentity[k]--; w.byIdentity[k] <= 0 {
		delete(w.byIdentity, k)
	}
	if w.byTenant[k.tenant]--; w.byTenant[k.tenant] <= 0 {
		delete(w.byTenant, k.tenant)
	}
}
