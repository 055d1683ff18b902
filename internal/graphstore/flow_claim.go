package graphstore

import (
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/flow"
	"github.com/tether-run/tether/internal/records"
)

// noteSlots records that n's slots were (was) and are (holds) held, so
// this transaction's claims see its own changes and the commit moves the
// counts. Keys do not change while a node holds slots (a patch refuses
// it), so n's keys are the ones it held.
func (tx *Tx) noteSlots(n *records.Node, was, holds bool) {
	if was == holds || len(n.ConcurrencyKeys) == 0 {
		return
	}
	d := int32(1)
	if was {
		d = -1
	}
	if tx.flowDelta == nil {
		tx.flowDelta = map[flowKey]int32{}
		tx.OnCommit(tx.applyFlowDelta)
	}
	for _, k := range n.ConcurrencyKeys {
		tx.flowDelta[flowKey{n.Tenant, k}] += d
	}
}

// applyFlowDelta moves the committed counts, on the writer, and wakes the
// claimers of every tenant in which a slot freed.
func (tx *Tx) applyFlowDelta() {
	f := tx.store.flow
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, d := range tx.flowDelta {
		n := f.running[k] + d
		if n <= 0 {
			delete(f.running, k)
		} else {
			f.running[k] = n
		}
		if d < 0 {
			f.wakeTenant(k.Tenant)
		}
	}
}

// keyRunning is the slots of key held as this transaction sees them. The
// writer alone changes the committed counts, so it reads them unlocked.
func (tx *Tx) keyRunning(tenant, key string) int64 {
	k := flowKey{tenant, key}
	return int64(tx.store.flow.running[k] + tx.flowDelta[k])
}

// keyLimit is the limit on live slots of key: the least of its own limit
// and those of the prefixes it matches, or the queue's default per key
// when none of those is set (0: no limit).
func (tx *Tx) keyLimit(tenant, key string, q records.QueueSettings) int64 {
	f := tx.store.flow
	var limit int64
	if l, ok := f.limits[tenant][key]; ok && l.MaxRunning > 0 {
		limit = l.MaxRunning
	}
	for p, l := range f.prefix[tenant] {
		if l.MaxRunning > 0 && hasPrefix(key, flow.PrefixOf(p)) && (limit == 0 || l.MaxRunning < limit) {
			limit = l.MaxRunning
		}
	}
	if limit == 0 {
		limit = q.MaxRunningPerKey
	}
	return limit
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// FlowAdmit applies flow control to a claim of n (in queue settings q),
// at the claim's instant: every key of n under its limit, no key's budget
// spent in its window, and a token in the queue's start rate and in every
// key's; it takes the tokens. A node that already holds its slots (a
// hand-off's target claiming it) passes: the slots are its own. It reads
// only memory: the configuration is cached and the counts derived.
func (tx *Tx) FlowAdmit(n *records.Node, q records.QueueSettings) error {
	if n.SlotHeld && len(n.ConcurrencyKeys) > 0 {
		return nil
	}
	f := tx.store.flow
	for _, k := range n.ConcurrencyKeys {
		if limit := tx.keyLimit(n.Tenant, k, q); limit > 0 {
			if running := tx.keyRunning(n.Tenant, k); running >= limit {
				return &fault.Throttled{Reason: fault.ThrottleConcurrency, Key: k, Limit: limit, Running: running}
			}
		}
		if b, ok := f.budgets[n.Tenant][k]; ok {
			start, end := flow.Window(b.WindowMS, tx.now)
			if b.WindowStart == start.UnixMilli() && b.Spent >= b.Limit {
				return &fault.Throttled{Reason: fault.ThrottleBudget, Key: k, WindowEnd: end, RetryAfter: end.Sub(tx.now)}
			}
		}
	}
	// Every bucket must have a token before any is taken.
	var take []*flow.Bucket
	check := func(name string, bk flowKey, r flow.Rate) error {
		b := f.buckets[bk]
		if b == nil {
			b = &flow.Bucket{}
			f.buckets[bk] = b
		}
		if wait := b.Wait(r, tx.now); wait > 0 {
			return &fault.Throttled{Reason: fault.ThrottleRate, Key: name, RetryAfter: wait}
		}
		take = append(take, b)
		return nil
	}
	if q.RateBurst > 0 && n.Queue != "" {
		if err := check(n.Queue, flowKey{n.Tenant, "q:" + n.Queue}, flow.Rate{PerSecond: q.RatePerSecond, Burst: q.RateBurst}); err != nil {
			return err
		}
	}
	for _, k := range n.ConcurrencyKeys {
		if l, ok := f.limits[n.Tenant][k]; ok && l.RateBurst > 0 {
			if err := check(k, flowKey{n.Tenant, "k:" + k}, flow.Rate{PerSecond: l.RatePerSecond, Burst: l.RateBurst}); err != nil {
				return err
			}
		}
		for p, l := range f.prefix[n.Tenant] {
			// A prefix's rate holds per distinct matching key, as its limit does.
			if l.RateBurst > 0 && hasPrefix(k, flow.PrefixOf(p)) {
				if err := check(k, flowKey{n.Tenant, "p:" + p + "\x00" + k}, flow.Rate{PerSecond: l.RatePerSecond, Burst: l.RateBurst}); err != nil {
					return err
				}
			}
		}
	}
	for _, b := range take {
		b.Take()
	}
	return nil
}

// FlowSpend adds a run's usage to the budgets of n's keys, in this
// transaction: the spend is stored with the usage that caused it.
func (tx *Tx) FlowSpend(n *records.Node, usage map[string]float64) error {
	if len(usage) == 0 || len(n.ConcurrencyKeys) == 0 {
		return nil
	}
	budgets := tx.store.flow.budgets[n.Tenant]
	if len(budgets) == 0 {
		return nil
	}
	for _, k := range n.ConcurrencyKeys {
		b, ok := budgets[k]
		if !ok {
			continue
		}
		if mine, ok := tx.budgets[flowKey{n.Tenant, k}]; ok {
			b = mine
		}
		v, ok := usage[b.Usage]
		if !ok || v == 0 {
			continue
		}
		start, _ := flow.Window(b.WindowMS, tx.now)
		if b.WindowStart != start.UnixMilli() {
			b.WindowStart, b.Spent = start.UnixMilli(), 0
		}
		b.Spent += v
		if err := tx.budgetPut(n.Tenant, k, &b); err != nil {
			return err
		}
	}
	return nil
}
