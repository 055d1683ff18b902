package queuemetrics

import "sync"

// Other is the label value of the tenants and queues past the caps.
const Other = "other"

// Limits bound the label values (TETHER_METRICS_MAX_TENANTS and
// TETHER_METRICS_MAX_QUEUES).
type Limits struct {
	MaxTenants int // tenants with labels of their own (default 100)
	MaxQueues  int // queues per tenant with labels of their own (default 100)
}

// The default caps.
const (
	DefaultMaxTenants = 100
	DefaultMaxQueues  = 100
)

func (l Limits) withDefaults() Limits {
	if l.MaxTenants <= 0 {
		l.MaxTenants = DefaultMaxTenants
	}
	if l.MaxQueues <= 0 {
		l.MaxQueues = DefaultMaxQueues
	}
	return l
}

// labelKey is the label values of one series group.
type labelKey struct{ tenant, queue string }

// labeller hands out label values within the caps; a value once given is
// kept, so a series never moves between its own labels and "other".
type labeller struct {
	lim     Limits
	mu      sync.Mutex
	tenants map[string]map[string]struct{} // tenant -> its queues with labels
}

func newLabeller(lim Limits) *labeller {
	return &labeller{lim: lim.withDefaults(), tenants: map[string]map[string]struct{}{}}
}

// label returns the label values of (tenant, queue); call with mu held.
func (l *labeller) label(tenant, queue string) labelKey {
	queues, ok := l.tenants[tenant]
	if !ok {
		if len(l.tenants) >= l.lim.MaxTenants {
			return labelKey{Other, Other}
		}
		queues = map[string]struct{}{}
		l.tenants[tenant] = queues
	}
	if _, ok := queues[queue]; ok {
		return labelKey{tenant, queue}
	}
	if len(queues) >= l.lim.MaxQueues {
		return labelKey{tenant, Other}
	}
	queues[queue] = struct{}{}
	return labelKey{tenant, queue}
}
