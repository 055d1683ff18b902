package flowcheck

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Rule names the promise a violation breaks.
type Rule string

// The promises Check holds a history to.
const (
	RuleRunning Rule = "max_running"
	RuleRate    Rule = "rate"
)

// Violation is one proof that a promise was broken.
type Violation struct {
	Rule Rule `json:"rule"`
	// Bucket is what the promise bounds: a key ("repo:acme/web") or a
	// queue ("queue jobs").
	Bucket string `json:"bucket"`
	// Pattern is the limit that was exceeded: the exact key or the prefix
	// ("repo:*"), or the queue.
	Pattern string `json:"pattern"`
	// From and To are the instant (max_running: From == To) or the window
	// (rate) of the violation, Unix ns.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Count is how many leases were surely live at once (max_running) or
	// surely granted in the window (rate); Bound what the limit allows.
	Count int     `json:"count"`
	Bound float64 `json:"bound"`
	// Leases are the leases counted.
	Leases []LeaseID `json:"leases"`
}

func (v Violation) String() string {
	ids := make([]string, len(v.Leases))
	for i, id := range v.Leases {
		ids[i] = fmt.Sprintf("%s#%d", id.Node, id.Fence)
	}
	switch v.Rule {
	case RuleRunning:
		return fmt.Sprintf("%s: %d leases surely running at once at %s, limit %s = %g: %s",
			v.Bucket, v.Count, stamp(v.From), v.Pattern, v.Bound, strings.Join(ids, " "))
	default:
		return fmt.Sprintf("%s: %d grants surely within [%s, %s] (%v), rate %s allows %.2f: %s",
			v.Bucket, v.Count, stamp(v.From), stamp(v.To), time.Duration(v.To-v.From), v.Pattern, v.Bound, strings.Join(ids, " "))
	}
}

func stamp(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000000") }

// Report is the verdict on a history, and how hard the history pressed on
// each promise (a history that never reached a limit proves little).
type Report struct {
	Leases int // leases granted
	// SurelyLive counts the leases with a non-empty surely-live interval.
	SurelyLive int
	// LimitedKeys counts the distinct keys a max_running applied to;
	// AtLimit those whose surely-running count reached their limit at
	// some instant.
	LimitedKeys, AtLimit int
	// RateBuckets counts the buckets checked; FullestRate is the highest
	// count ÷ bound of any window in any of them (1 at the limit).
	RateBuckets int
	FullestRate float64
	Violations  []Violation
}

// OK says whether no violation was found.
func (r Report) OK() bool { return len(r.Violations) == 0 }

func (r Report) String() string {
	s := fmt.Sprintf("%d leases (%d surely live for a while); %d limited keys, %d of them at their limit at some instant; %d rate buckets, fullest window at %.0f%% of its bound; %d violations",
		r.Leases, r.SurelyLive, r.LimitedKeys, r.AtLimit, r.RateBuckets, 100*r.FullestRate, len(r.Violations))
	for i, v := range r.Violations {
		if i == maxShown {
			s += fmt.Sprintf("\n  … and %d more", len(r.Violations)-maxShown)
			break
		}
		s += "\n  " + v.String()
	}
	return s
}

// maxShown is how many violations a report's String shows.
const maxShown = 10

// Check finds every proof in ops that cfg.Limits were broken: for each
// limited key, the first instant too many leases were surely running; for
// each rate bucket, the first window (by its start) with too many grants
// surely inside it (only answered grants count: a re-claim renews).
func Check(cfg Config, ops []Op) Report {
	slack := int64(cfg.ClockSlack)
	ls := leases(ops, slack)
	r := Report{Leases: len(ls)}
	byKey := map[string][]*lease{}
	byQueue := map[string][]*lease{}
	for _, l := range ls {
		if l.from < l.to {
			r.SurelyLive++
		}
		for _, k := range l.keys {
			byKey[k] = append(byKey[k], l)
		}
		byQueue[l.queue] = append(byQueue[l.queue], l)
	}
	for _, k := range sortedKeys(byKey) {
		if limit, ok := cfg.Limits.runningLimit(k); ok {
			r.LimitedKeys++
			peak, v := sweep(k, limit, byKey[k])
			if peak >= limit {
				r.AtLimit++
			}
			if v != nil {
				v.Pattern = pattern(cfg.Limits.MaxRunning, k, limit)
				r.Violations = append(r.Violations, *v)
			}
		}
		rates := cfg.Limits.keyRates(k)
		for _, p := range sortedKeys(rates) {
			r.checkRate(k, p, rates[p], byKey[k], slack)
		}
	}
	for _, q := range sortedKeys(byQueue) {
		if rate, ok := cfg.Limits.QueueRates[q]; ok {
			r.checkRate("queue "+q, q, rate, byQueue[q], slack)
		}
	}
	return r
}

// sweep walks the surely-live intervals of one key's leases in time order
// and returns the most that overlap at one instant, and the first instant
// more than limit do.
func sweep(key string, limit int, ls []*lease) (int, *Violation) {
	type edge struct {
		at    int64
		delta int
		l     *lease
	}
	var edges []edge
	for _, l := range ls {
		if l.from < l.to {
			edges = append(edges, edge{l.from, +1, l}, edge{l.to, -1, l})
		}
	}
	// Half-open intervals: at one instant, ends come before starts.
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta))
	})
	live := map[*lease]bool{}
	peak := 0
	var found *Violation
	for _, e := range edges {
		if e.delta < 0 {
			delete(live, e.l)
			continue
		}
		live[e.l] = true
		peak = max(peak, len(live))
		if len(live) > limit && found == nil {
			found = &Violation{Rule: RuleRunning, Bucket: key, From: e.at, To: e.at, Count: len(live), Bound: float64(limit)}
			for l := range live {
				found.Leases = append(found.Leases, l.id)
			}
			slices.SortFunc(found.Leases, compareIDs)
		}
	}
	return peak, found
}

// checkRate looks for a window in which the leases of ls were surely
// granted more often than rate allows, and notes how full the fullest
// window came.
func (r *Report) checkRate(bucket, pattern string, rate Rate, ls []*lease, slack int64) {
	r.RateBuckets++
	// A lease whose grant the history does not hold cannot be placed.
	grants := slices.DeleteFunc(slices.Clone(ls), func(l *lease) bool { return l.granted.Kind == 0 })
	slices.SortFunc(grants, func(a, b *lease) int { return cmp.Compare(a.granted.Call, b.granted.Call) })
	// From the latest start back, keep the returns of the grants sent at
	// or after the window's start, in order: the k-th of them ends the
	// shortest window from that start holding k grants.
	var returns []int64
	var found *Violation
	for i := len(grants) - 1; i >= 0; i-- {
		t1 := grants[i].granted.Call
		ret := grants[i].granted.Return
		at, _ := slices.BinarySearch(returns, ret)
		returns = slices.Insert(returns, at, ret)
		for k, t2 := range returns {
			bound := rate.PerSecond*float64(t2-t1+slack)/1e9 + rate.Burst
			count := k + 1
			if bound > 0 {
				r.FullestRate = max(r.FullestRate, float64(count)/bound)
			}
			if float64(count) > bound {
				v := Violation{Rule: RuleRate, Bucket: bucket, Pattern: pattern, From: t1, To: t2, Count: count, Bound: bound}
				for _, g := range grants[i:] {
					if g.granted.Return <= t2 {
						v.Leases = append(v.Leases, g.id)
					}
				}
				found = &v // the earliest start wins: the loop runs backwards
				break
			}
		}
	}
	if found != nil {
		r.Violations = append(r.Violations, *found)
	}
}

// pattern is the limit among limits that gave key its limit n.
func pattern(limits map[string]int, key string, n int) string {
	for _, p := range sortedKeys(limits) {
		if limits[p] == n && matches(p, key) {
			return p
		}
	}
	return key
}

func compareIDs(a, b LeaseID) int {
	return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Fence, b.Fence))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
