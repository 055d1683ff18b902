package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Flow-control scenario: (k) claim-next + complete on a backlog whose nodes
// carry concurrency keys, with a limit on every key (k-limits: max_running
// 1 for each key, through the prefix limit "key:*") against the same
// backlog without limits (k-plain). Node i carries key i / 10, so that the
// head of the ready order is ten nodes of one key: with the limit, claim-next
// must pass over the nodes of every key at its limit without walking them.
// Both servers are preloaded, then measured in turn, -flow-rounds times
// each, alternating; the figure is the server's CPU per claim-next+complete
// pair, the median of each mode's rounds, and its ratio.

// flowNodesPerKey is how many queued nodes share a key in (k).
const flowNodesPerKey = 10

// flowLimitBody is the limit k-limits sets on every key.
var flowLimitBody = []byte(`{"max_running":1}`)

// keyedItem is the create body of a task in queue q with id prefix-i whose
// concurrency key is key:(i / flowNodesPerKey mod keys).
func keyedItem(prefix string, keys int) func(dst []byte, i int) []byte {
	plain := queuedItem(prefix, "q")
	return func(dst []byte, i int) []byte {
		dst = plain(dst, i)
		dst = append(dst[:len(dst)-1], `,"concurrency_keys":["key:`...)
		dst = strconv.AppendInt(dst, int64(i/flowNodesPerKey%keys), 10)
		return append(dst, `"]}`...)
	}
}

// flowMode is one side of (k): its stage and its rounds.
type flowMode struct {
	name    string
	s       *stage
	ops     int64
	span    time.Duration // measured
	cpu     usage
	perPair []float64 // server CPU µs per pair, a round each
	recs    []*recorder
	note    string
}

func (b *bench) scenarioK() ([]*result, error) {
	n, keys := b.cfg.flowNodes, b.cfg.flowKeys
	modes := []*flowMode{{name: "k-plain"}, {name: "k-limits"}}
	abort := func(err error) ([]*result, error) {
		for _, m := range modes {
			if m.s != nil {
				m.s.abort()
			}
		}
		return nil, err
	}
	for i, m := range modes {
		s, err := b.open(m.name)
		if err != nil {
			return abort(err)
		}
		m.s = s
		if i == 1 {
			if _, err := s.disp.must("PUT", "/v1/limits/key:*", flowLimitBody, 200); err != nil {
				return abort(fmt.Errorf("error setting the limit: %w", err))
			}
		}
		took, err := s.createNodes(n, keyedItem("k-", keys))
		if err != nil {
			return abort(err)
		}
		m.note = fmt.Sprintf("preloaded %d nodes over %d keys (%d a key) in %.2fs", n, keys, flowNodesPerKey, took.Seconds())
	}
	for round := range b.cfg.flowRounds {
		for _, m := range modes {
			ws := m.s.workers()
			dr := m.s.drive(ws, b.cfg.warmup, b.cfg.duration, claimComplete("q"))
			ops, rec := totals(ws)
			probe := newResult(m.name, b.cfg.clients)
			span := measuredSpan(ws, dr.win, probe)
			if span == 0 || ops == 0 {
				return abort(fmt.Errorf("%s round %d: nothing measured (%v): raise -flow-nodes", m.name, round, probe.notes))
			}
			m.ops += ops
			m.span += span
			m.cpu = m.cpu.add(dr.cpu)
			m.recs = append(m.recs, rec)
			m.perPair = append(m.perPair, dr.cpu.server/float64(ops)*1e6)
		}
	}
	var out []*result
	for _, m := range modes {
		r := m.s.result(m.name, m.cpu.server)
		r.fill(m.ops, m.span, merge(m.recs...))
		r.figure("server_cpu_us_per_pair", round1(median(m.perPair)))
		r.note("%s", m.note)
		r.note("%d rounds alternating with the other mode; server CPU µs per pair by round: %v (median reported)", b.cfg.flowRounds, rounded(m.perPair))
		cpuNote(r, m.cpu)
		out = append(out, r)
	}
	ratio := ratio(median(modes[1].perPair), median(modes[0].perPair))
	lim := out[1]
	lim.figure("server_cpu_per_pair_vs_plain", round3(ratio))
	lim.note("max_running 1 on every key (PUT /v1/limits/key:*); server CPU per pair %.2f× that of k-plain", ratio)
	var errs []error
	for _, m := range modes {
		if err := m.s.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if lim := b.cfg.maxLimitCPURatio; lim > 0 && ratio > lim {
		errs = append(errs, fmt.Errorf("server CPU per pair with limits is %.2f× that without, above -max-limit-cpu-ratio %.2f", ratio, lim))
	}
	return out, errors.Join(errs...)
}

// median of xs (0 when empty).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func rounded(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = round1(x)
	}
	return out
}
