package flowcheck

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A simulated server that keeps its limits, acting at one instant inside
// each call's interval, with intervals that overlap freely: the checker
// must never flag its histories (soundness under uncertainty), and must
// flag most of them when told a tighter limit than the server kept (teeth).

// simServer is a linearizable server holding leases under limits.
type simServer struct {
	rng     *rand.Rand
	limits  Limits
	ttl     int64
	jitter  int64 // a call is sent up to this long before the server acts, answered up to this long after
	running map[LeaseID]*simLease
	tokens  map[string]float64 // bucket -> tokens
	last    map[string]int64   // bucket -> last refill
	seq     int
	ops     []Op
}

type simLease struct {
	keys    []string
	expires int64
}

func newSim(seed uint64, limits Limits) *simServer {
	return &simServer{
		rng: rand.New(rand.NewPCG(seed, 1)), limits: limits, ttl: int64(50 * time.Millisecond), jitter: int64(3 * time.Millisecond),
		running: map[LeaseID]*simLease{}, tokens: map[string]float64{}, last: map[string]int64{},
	}
}

func (s *simServer) around(t int64) (int64, int64) {
	return t - s.rng.Int64N(s.jitter+1), t + s.rng.Int64N(s.jitter+1)
}

// buckets are the rate buckets a grant of a node with keys takes from.
func (s *simServer) buckets(keys []string) map[string]Rate {
	out := map[string]Rate{}
	for q, r := range s.limits.QueueRates {
		out["queue "+q] = r
	}
	for _, k := range keys {
		for p, r := range s.limits.keyRates(k) {
			out[p+" "+k] = r
		}
	}
	return out
}

func (s *simServer) refill(bucket string, r Rate, t int64) float64 {
	last, ok := s.last[bucket]
	if !ok {
		s.tokens[bucket], s.last[bucket] = 0, t // a bucket starts empty
		return 0
	}
	s.tokens[bucket] = min(r.Burst, s.tokens[bucket]+r.PerSecond*float64(t-last)/1e9)
	s.last[bucket] = t
	return s.tokens[bucket]
}

// claim grants a lease of a new node with keys at t when every limit and
// bucket allows it.
func (s *simServer) claim(t int64, keys []string) {
	for id, l := range s.running {
		if l.expires <= t {
			delete(s.running, id)
		}
	}
	for _, k := range keys {
		if n, ok := s.limits.runningLimit(k); ok {
			count := 0
			for _, l := range s.running {
				for _, lk := range l.keys {
					if lk == k {
						count++
					}
				}
			}
			if count >= n {
				return
			}
		}
	}
	bs := s.buckets(keys)
	for b, r := range bs {
		if s.refill(b, r, t) < 1 {
			return
		}
	}
	for b := range bs {
		s.tokens[b]--
	}
	s.seq++
	id := LeaseID{Node: fmt.Sprintf("n%d", s.seq), Fence: 1}
	s.running[id] = &simLease{keys: keys, expires: t + s.ttl}
	call, ret := s.around(t)
	// A told expiry is rounded down to the millisecond.
	told := (t + s.ttl) / 1e6 * 1e6
	s.ops = append(s.ops, Op{Kind: Grant, Node: id.Node, Fence: 1, Keys: keys, Queue: "q", Call: call, Return: ret, Expires: told})
}

// some is a running lease, picked at random (false when none runs).
func (s *simServer) some(t int64) (LeaseID, *simLease, bool) {
	var ids []LeaseID
	for id, l := range s.running {
		if l.expires > t {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return LeaseID{}, nil, false
	}
	// Map order is random, but not from the seed: sort for replays.
	slices.SortFunc(ids, compareIDs)
	id := ids[s.rng.IntN(len(ids))]
	return id, s.running[id], true
}

func (s *simServer) end(t int64) {
	if id, _, ok := s.some(t); ok {
		delete(s.running, id)
		call, _ := s.around(t)
		s.ops = append(s.ops, Op{Kind: End, Node: id.Node, Fence: id.Fence, Call: call})
	}
}

func (s *simServer) renew(t int64) {
	if id, l, ok := s.some(t); ok {
		l.expires = t + s.ttl
		call, ret := s.around(t)
		s.ops = append(s.ops, Op{Kind: Renew, Node: id.Node, Fence: id.Fence, Call: call, Return: ret, Expires: (t + s.ttl) / 1e6 * 1e6})
	}
}

// run acts steps times, each at a random instant after the last.
func (s *simServer) run(steps int) []Op {
	t := origin
	keyset := []string{"repo:a", "repo:b", "provider:x"}
	for range steps {
		t += s.rng.Int64N(int64(2 * time.Millisecond))
		switch n := s.rng.IntN(10); {
		case n < 5:
			keys := []string{keyset[s.rng.IntN(2)]}
			if s.rng.IntN(2) == 0 {
				keys = append(keys, keyset[2])
			}
			s.claim(t, keys)
		case n < 8:
			s.end(t)
		default:
			s.renew(t)
		}
	}
	return s.ops
}

var simLimits = Limits{
	MaxRunning: map[string]int{"repo:*": 3, "provider:x": 2},
	KeyRates:   map[string]Rate{"provider:x": {PerSecond: 200, Burst: 3}},
	QueueRates: map[string]Rate{"q": {PerSecond: 500, Burst: 5}},
}

func TestSimulatedLegalHistoriesPass(t *testing.T) {
	t.Parallel()
	atLimit := 0
	for seed := range uint64(100) {
		ops := newSim(seed, simLimits).run(1000)
		r := Check(Config{Limits: simLimits, ClockSlack: DefaultClockSlack}, ops)
		require.True(t, r.OK(), "seed %d: a history of a server that kept its limits was flagged:\n%v", seed, r)
		if r.AtLimit > 0 {
			atLimit++
		}
	}
	require.Greater(t, atLimit, 50, "the simulated load rarely reached a limit: the test proves little")
}

func TestSimulatedOverLimitHistoriesAreCaught(t *testing.T) {
	t.Parallel()
	tighter := []Limits{
		{MaxRunning: map[string]int{"repo:*": 2}},
		{MaxRunning: map[string]int{"provider:x": 1}},
		{KeyRates: map[string]Rate{"provider:x": {PerSecond: 100, Burst: 2}}},
		{QueueRates: map[string]Rate{"q": {PerSecond: 250, Burst: 3}}},
	}
	for i, told := range tighter {
		caught := 0
		for seed := range uint64(25) {
			ops := newSim(seed, simLimits).run(1000)
			if !Check(Config{Limits: told, ClockSlack: DefaultClockSlack}, ops).OK() {
				caught++
			}
		}
		require.Greater(t, caught, 20, "limits %d: a server over them was caught in %d of 25 histories", i, caught)
	}
}
