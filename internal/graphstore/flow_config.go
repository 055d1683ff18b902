package graphstore

import (
	"sort"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/flow"
	"github.com/tether-run/tether/internal/records"
)

// LimitPut stores the limit on a tenant's concurrency key (or prefix); the
// cache follows on commit, and waiting claimers are woken.
func (tx *Tx) LimitPut(tenant, key string, l records.LimitRecord) error {
	if err := tx.setRecord(records.LimitKey(tenant, key), &l); err != nil {
		return err
	}
	f := tx.store.flow
	tx.OnCommit(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.setLimit(tenant, key, &l)
		f.wakeTenant(tenant)
	})
	return nil
}

// LimitDelete removes a key's limit; fault.NotFound when it has none.
func (tx *Tx) LimitDelete(tenant, key string) error {
	var l records.LimitRecord
	if ok, err := tx.getRecord(records.LimitKey(tenant, key), &l); err != nil || !ok {
		if err == nil {
			err = &fault.NotFound{What: "limit", ID: key}
		}
		return err
	}
	if err := tx.kv.Delete(records.LimitKey(tenant, key)); err != nil {
		return err
	}
	f := tx.store.flow
	tx.OnCommit(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.setLimit(tenant, key, nil)
		f.wakeTenant(tenant)
	})
	return nil
}

// LimitView is a limit with what counts against it now.
type LimitView struct {
	Key     string
	Limit   records.LimitRecord
	Running int64 // an exact key's slots; a prefix's busiest matching key's
	// RunningKeys is, for a prefix, how many matching keys hold a slot.
	RunningKeys int64
}

// Limit is the limit on a tenant's key (or prefix), with what runs under
// it now; false when there is none.
func (s *Store) Limit(tenant, key string) (LimitView, bool) {
	f := s.flow
	m := f.limits
	if flow.IsPrefix(key) {
		m = f.prefix
	}
	f.mu.RLock()
	l, ok := m[tenant][key]
	f.mu.RUnlock()
	if !ok {
		return LimitView{}, false
	}
	v := LimitView{Key: key, Limit: l}
	s.fillRunning(tenant, &v)
	return v, true
}

// fillRunning sets v's running counts: an exact key's slots, or a prefix's
// busiest matching key and how many matching keys hold a slot.
func (s *Store) fillRunning(tenant string, v *LimitView) {
	if !flow.IsPrefix(v.Key) {
		v.Running = s.KeyRunning(tenant, v.Key)
		return
	}
	s.KeysRunning(tenant, flow.PrefixOf(v.Key), func(_ string, n int64) {
		v.RunningKeys++
		v.Running = max(v.Running, n)
	})
}

// Limits lists a tenant's limits by key, after the key after ("" from the
// first), at most limit of them, and whether more follow.
func (s *Store) Limits(tenant, after string, limit int) ([]LimitView, bool) {
	f := s.flow
	f.mu.RLock()
	var out []LimitView
	for _, m := range []map[string]records.LimitRecord{f.limits[tenant], f.prefix[tenant]} {
		for k, l := range m {
			if k > after {
				out = append(out, LimitView{Key: k, Limit: l})
			}
		}
	}
	f.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	for i := range out {
		s.fillRunning(tenant, &out[i])
	}
	return out, more
}

// BudgetPut stores a tenant's budget on a key. The spend of the current
// window is kept when the counter and the window stay the same.
func (tx *Tx) BudgetPut(tenant, key string, usage string, limit float64, windowMS int64) (records.BudgetRecord, error) {
	b := records.BudgetRecord{Usage: usage, Limit: limit, WindowMS: windowMS}
	if old, ok := tx.budget(tenant, key); ok && old.Usage == usage && old.WindowMS == windowMS {
		b.WindowStart, b.Spent = old.WindowStart, old.Spent
	}
	return b, tx.budgetPut(tenant, key, &b)
}

// budget is a key's budget as this transaction sees it.
func (tx *Tx) budget(tenant, key string) (records.BudgetRecord, bool) {
	if b, ok := tx.budgets[flowKey{tenant, key}]; ok {
		return b, b.WindowMS != 0
	}
	if !tx.writable {
		tx.store.flow.mu.RLock()
		defer tx.store.flow.mu.RUnlock()
	}
	b, ok := tx.store.flow.budgets[tenant][key]
	return b, ok
}

// budgetPut writes a budget and has the cache follow on commit.
func (tx *Tx) budgetPut(tenant, key string, b *records.BudgetRecord) error {
	if err := tx.setRecord(records.BudgetKey(tenant, key), b); err != nil {
		return err
	}
	if tx.budgets == nil {
		tx.budgets = map[flowKey]records.BudgetRecord{}
	}
	first := true
	if _, ok := tx.budgets[flowKey{tenant, key}]; ok {
		first = false
	}
	tx.budgets[flowKey{tenant, key}] = *b
	if first {
		f := tx.store.flow
		tx.OnCommit(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			b := tx.budgets[flowKey{tenant, key}]
			if b.WindowMS == 0 {
				f.setBudget(tenant, key, nil)
			} else {
				f.setBudget(tenant, key, &b)
			}
			f.wakeTenant(tenant)
		})
	}
	return nil
}

// BudgetDelete removes a key's budget; fault.NotFound when it has none.
func (tx *Tx) BudgetDelete(tenant, key string) error {
	if _, ok := tx.budget(tenant, key); !ok {
		return &fault.NotFound{What: "budget", ID: key}
	}
	if err := tx.kv.Delete(records.BudgetKey(tenant, key)); err != nil {
		return err
	}
	zero := records.BudgetRecord{}
	if tx.budgets == nil {
		tx.budgets = map[flowKey]records.BudgetRecord{}
	}
	_, had := tx.budgets[flowKey{tenant, key}]
	tx.budgets[flowKey{tenant, key}] = zero
	if !had {
		f := tx.store.flow
		tx.OnCommit(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.setBudget(tenant, key, nil)
			f.wakeTenant(tenant)
		})
	}
	return nil
}

// BudgetView is a budget by key.
type BudgetView struct {
	Key    string
	Budget records.BudgetRecord
}

// Budgets lists a tenant's budgets by key after after, at most limit, and
// whether more follow.
func (s *Store) Budgets(tenant, after string, limit int) ([]BudgetView, bool) {
	f := s.flow
	f.mu.RLock()
	var out []BudgetView
	for k, b := range f.budgets[tenant] {
		if k > after {
			out = append(out, BudgetView{Key: k, Budget: b})
		}
	}
	f.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more
}
