package main

// The power-loss test's bookkeeping: what the server acknowledged and what
// clients saw, across every crash so far, and the invariant violations found.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/client"
)

// plState is where a node rests, as far as the clients know.
type plState struct {
	status client.NodeStatus // queued, running or done
	holder string            // running: the lease's holder
	fence  int64             // running: the lease's fence
}

func (s plState) String() string {
	if s.status == client.NodeStatusRunning {
		return fmt.Sprintf("running by %s fence %d", s.holder, s.fence)
	}
	return string(s.status)
}

// plOp is a request sent for a node and not (yet) answered.
type plOp struct {
	kind   string // create, claim, complete, release
	holder string // claim: who claims
}

// plNode is one node of the test. Only one goroutine drives a node at a
// time, so its record needs no lock of its own beyond the ledger's.
type plNode struct {
	id      string
	known   bool // its create was acknowledged (or it was seen after a restart)
	state   plState
	lastOp  string // the acknowledged operation that made state
	pending *plOp  // sent, not answered; a crash leaves it ambiguous
	cycle   int    // the cycle that created it
}

// plEvent is what a client saw of an event; equal events are identical.
type plEvent struct {
	Type   client.EventType
	NodeID string
	By     string
	At     int64 // Unix nanoseconds
	Data   string
}

func toPLEvent(e client.Event) plEvent {
	data, _ := json.Marshal(e.Data) // map keys sorted: deterministic
	return plEvent{Type: e.Type, NodeID: e.NodeID, By: e.By, At: e.At.UnixNano(), Data: string(data)}
}

func (e plEvent) String() string {
	return fmt.Sprintf("%s %s by %s at %s %s", e.Type, e.NodeID, e.By, time.Unix(0, e.At).UTC().Format(time.RFC3339Nano), e.Data)
}

type fenceKey struct {
	node  string
	fence int64
}

// plCounts are per-cycle tallies of acknowledged work.
type plCounts struct {
	creates, claims, completes, releases int
	events                               int // distinct events seen by the feed reader
	unanswered                           int // requests in flight at the kill
}

func (c plCounts) String() string {
	return fmt.Sprintf("%d creates, %d claims, %d completes, %d releases acknowledged; %d events seen; %d requests unanswered at the kill",
		c.creates, c.claims, c.completes, c.releases, c.events, c.unanswered)
}

// plLedger is everything acknowledged and seen, across all cycles.
type plLedger struct {
	mu       sync.Mutex
	nodes    map[string]*plNode
	events   map[int64]plEvent   // every event any client saw, by seq
	eventsAt map[int64]int       // the cycle in which it was first seen
	fences   map[fenceKey]string // (node, fence) -> the holder it was issued to
	fenceSrc map[fenceKey]string // where that was seen
	maxSeq   int64
	// Each violation is reported once: a lost event again when its seq
	// comes back with new content, a reused fence once whoever shows it.
	lostReported  map[int64]bool
	reuseReported map[int64]bool
	fenceReported map[fenceKey]bool
	cycle         plCounts
	total         plCounts
	found         *plFindings
}

func newPLLedger() *plLedger {
	return &plLedger{
		nodes: map[string]*plNode{}, events: map[int64]plEvent{}, eventsAt: map[int64]int{},
		fences: map[fenceKey]string{}, fenceSrc: map[fenceKey]string{},
		lostReported: map[int64]bool{}, reuseReported: map[int64]bool{}, fenceReported: map[fenceKey]bool{},
		found: newPLFindings(),
	}
}

func (l *plLedger) do(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// fence records that fence of node was issued to holder (seen at src) and
// reports a fence handed to two different claims. Under l.mu.
func (l *plLedger) fence(node string, fence int64, holder, src string, cycle int) {
	k := fenceKey{node, fence}
	if prev, ok := l.fences[k]; ok {
		if prev != holder && !l.fenceReported[k] {
			l.fenceReported[k] = true
			l.found.add(cycle, "fence reused", "%s fence %d: issued to %s (%s), then to %s (%s)", node, fence, prev, l.fenceSrc[k], holder, src)
		}
		return
	}
	l.fences[k] = holder
	l.fenceSrc[k] = fmt.Sprintf("%s in cycle %d", src, cycle)
}

// event records an event a client saw and reports a seq that came back
// with different content. Under l.mu.
func (l *plLedger) event(e client.Event, cycle int, src string) {
	ev := toPLEvent(e)
	if prev, ok := l.events[e.Seq]; ok {
		if prev != ev {
			l.reused(e.Seq, prev, ev, cycle, src)
		}
		return
	}
	l.events[e.Seq], l.eventsAt[e.Seq] = ev, cycle
	l.cycle.events++
	l.total.events++
	if e.Type == client.EventType("claimed") {
		if f, ok := e.Data["fence"].(float64); ok {
			l.fence(e.NodeID, int64(f), e.By, fmt.Sprintf("claimed event seq %d (%s)", e.Seq, src), cycle)
		}
	}
}

// reused reports that seq, seen as prev, came back as now; from then on now
// is what must not change. Under l.mu.
func (l *plLedger) reused(seq int64, prev, now plEvent, cycle int, src string) {
	if !l.reuseReported[seq] {
		l.reuseReported[seq] = true
		l.found.add(cycle, "event seq reused", "seq %d: seen in cycle %d as %v; in cycle %d (%s) it is %v", seq, l.eventsAt[seq], prev, cycle, src, now)
	}
	l.events[seq], l.eventsAt[seq] = now, cycle
}

// plFindings are invariant violations, by kind, with a few examples each.
type plFindings struct {
	mu       sync.Mutex
	counts   map[string]int
	perCycle map[int]map[string]int
	examples map[string][]string
}

const plExamples = 5

func newPLFindings() *plFindings {
	return &plFindings{counts: map[string]int{}, perCycle: map[int]map[string]int{}, examples: map[string][]string{}}
}

func (f *plFindings) add(cycle int, kind, format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[kind]++
	if f.perCycle[cycle] == nil {
		f.perCycle[cycle] = map[string]int{}
	}
	f.perCycle[cycle][kind]++
	if len(f.examples[kind]) < plExamples {
		f.examples[kind] = append(f.examples[kind], fmt.Sprintf("[cycle %d] ", cycle)+fmt.Sprintf(format, args...))
	}
}

// summary is "kind=n, ..." over all cycles (or one).
func (f *plFindings) summary(cycle int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.counts
	if cycle > 0 {
		m = f.perCycle[cycle]
	}
	if len(m) == 0 {
		return "none"
	}
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
