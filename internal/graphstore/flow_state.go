package graphstore

import (
	"sync"

	"github.com/tether-run/tether/internal/flow"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// Flow control's state in memory: the live slots per concurrency key, the
// tenants' limits and budgets (cached from their records, loaded at open),
// the start-rate buckets, and the channels that wake claimers waiting on
// flow control. Running counts are derived, never stored: at open from the
// node records that hold slots (indexes.HoldsSlots), and after by every
// committed transaction's changes (Tx.flowDelta), so they are exact across a
// restart and an etcd owner's takeover (its rebuild).

// flowKey is a concurrency key (or a start rate's name) of a tenant.
type flowKey struct{ Tenant, Key string }

type flowState struct {
	mu sync.RWMutex
	// running is the committed slots held per key; only the writer
	// changes it (under mu, in commit hooks), readers take mu to read.
	running map[flowKey]int32
	// limits and budgets are the committed configuration, by tenant then
	// key; a prefix limit's key ends in '*'.
	limits  map[string]map[string]records.LimitRecord
	prefix  map[string]map[string]records.LimitRecord
	budgets map[string]map[string]records.BudgetRecord
	// buckets are the start-rate buckets, the writer's alone: a bucket is
	// made empty the first time a claim looks at it, so a restart never
	// grants more than its burst.
	buckets map[flowKey]*flow.Bucket
	// wake per tenant is closed (and replaced) when a slot frees or the
	// configuration changes, to wake claimers waiting on flow control.
	wake map[string]chan struct{}
}

func newFlowState() *flowState {
	return &flowState{
		running: map[flowKey]int32{},
		limits:  map[string]map[string]records.LimitRecord{},
		prefix:  map[string]map[string]records.LimitRecord{},
		budgets: map[string]map[string]records.BudgetRecord{},
		buckets: map[flowKey]*flow.Bucket{},
		wake:    map[string]chan struct{}{},
	}
}

// countNode adds a node record's slots at rebuild.
func (f *flowState) countNode(tenant string, n *records.Node, holds bool) {
	if !holds {
		return
	}
	for _, k := range n.ConcurrencyKeys {
		f.running[flowKey{tenant, k}]++
	}
}

// load reads every tenant's limits and budgets, at open.
func (f *flowState) load(ktx *kv.Txn) error {
	err := ktx.Scan([]byte{records.TagLimit, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := records.SplitKey(key, 2)
		var l records.LimitRecord
		if err := decode(val, &l, key); err != nil || len(parts) != 2 {
			return false, err
		}
		f.setLimit(string(parts[0]), string(parts[1]), &l)
		return true, nil
	})
	if err != nil {
		return err
	}
	return ktx.Scan([]byte{records.TagBudget, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := records.SplitKey(key, 2)
		var b records.BudgetRecord
		if err := decode(val, &b, key); err != nil || len(parts) != 2 {
			return false, err
		}
		f.setBudget(string(parts[0]), string(parts[1]), &b)
		return true, nil
	})
}

// setLimit stores (l nil: removes) a limit in memory; call with mu held
// or before the store serves.
func (f *flowState) setLimit(tenant, key string, l *records.LimitRecord) {
	m := f.limits
	if flow.IsPrefix(key) {
		m = f.prefix
	}
	if l == nil {
		delete(m[tenant], key)
		return
	}
	if m[tenant] == nil {
		m[tenant] = map[string]records.LimitRecord{}
	}
	m[tenant][key] = *l
	// A changed rate starts its bucket over, empty.
	delete(f.buckets, flowKey{tenant, "k:" + key})
}

func (f *flowState) setBudget(tenant, key string, b *records.BudgetRecord) {
	if b == nil {
		delete(f.budgets[tenant], key)
		return
	}
	if f.budgets[tenant] == nil {
		f.budgets[tenant] = map[string]records.BudgetRecord{}
	}
	f.budgets[tenant][key] = *b
}

// wakeTenant wakes the tenant's claimers waiting on flow control; call
// with mu held.
func (f *flowState) wakeTenant(tenant string) {
	if ch, ok := f.wake[tenant]; ok {
		close(ch)
		delete(f.wake, tenant)
	}
}

// FlowWatch returns a channel closed when a slot of one of the tenant's
// keys frees or its flow configuration changes.
func (s *Store) FlowWatch(tenant string) <-chan struct{} {
	f := s.flow
	f.mu.Lock()
	defer f.mu.Unlock()
	ch, ok := f.wake[tenant]
	if !ok {
		ch = make(chan struct{})
		f.wake[tenant] = ch
	}
	return ch
}

// KeyRunning is how many slots of a tenant's concurrency key are held now
// (committed): live leases on nodes carrying it, and hand-offs waiting.
func (s *Store) KeyRunning(tenant, key string) int64 {
	s.flow.mu.RLock()
	defer s.flow.mu.RUnlock()
	return int64(s.flow.running[flowKey{tenant, key}])
}

// KeysRunning calls fn with every key of tenant starting with prefix that
// holds at least one slot, and its count. It walks the running keys of
// every tenant: a read for lists and metrics, never the claim path.
func (s *Store) KeysRunning(tenant, prefix string, fn func(key string, running int64)) {
	s.flow.mu.RLock()
	defer s.flow.mu.RUnlock()
	for k, n := range s.flow.running {
		if k.Tenant == tenant && n > 0 && len(k.Key) >= len(prefix) && k.Key[:len(prefix)] == prefix {
			fn(k.Key, int64(n))
		}
	}
}
