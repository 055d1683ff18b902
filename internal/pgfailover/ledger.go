package pgfailover

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Ledger records what a workload across a failover was told: every write
// acknowledged to it, and every error, with when the call began and ended.
// Check then says whether the errors fit the failover: each retryable, and
// none in a call that began after the workload was served again.
type Ledger struct {
	mu     sync.Mutex
	acked  []string
	ackAt  []time.Time
	errors []CallError
}

// CallError is one failed call.
type CallError struct {
	Began, Ended time.Time
	Err          string
	Retryable    bool
}

// Ack records an acknowledged write of id, answered at t.
func (l *Ledger) Ack(id string, t time.Time) {
	l.mu.Lock()
	l.acked = append(l.acked, id)
	l.ackAt = append(l.ackAt, t)
	l.mu.Unlock()
}

// Fail records a failed call.
func (l *Ledger) Fail(e CallError) {
	l.mu.Lock()
	l.errors = append(l.errors, e)
	l.mu.Unlock()
}

// Acked is a copy of every acknowledged id.
func (l *Ledger) Acked() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acked)
}

// AckedSince counts the writes acknowledged at or after t.
func (l *Ledger) AckedSince(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.ackAt {
		if !a.Before(t) {
			n++
		}
	}
	return n
}

// FirstAckAfter is the first acknowledgement after t (zero if none).
func (l *Ledger) FirstAckAfter(t time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, a := range l.ackAt {
		if a.After(t) && (first.IsZero() || a.Before(first)) {
			first = a
		}
	}
	return first
}

// Served is when the workload was served again after a failure at killed:
// the first acknowledgement after the first error that ended after killed
// (writes in flight at the kill may still be acknowledged before the first
// error), or killed itself when no call failed.
func (l *Ledger) Served(killed time.Time) time.Time {
	var first time.Time
	for _, e := range l.Errors() {
		if !e.Ended.Before(killed) && (first.IsZero() || e.Ended.Before(first)) {
			first = e.Ended
		}
	}
	if first.IsZero() {
		return killed
	}
	return l.FirstAckAfter(first)
}

// Errors is a copy of every failed call.
func (l *Ledger) Errors() []CallError {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errors)
}

// Check says what is wrong with the errors of a workload whose database
// failed at killed and served it again at served (Served): an error that is not retryable, one before the kill, or
// one in a call that began more than grace after served (a call already
// waiting on a dead connection when the new primary came may still fail).
func (l *Ledger) Check(killed, served time.Time, grace time.Duration) error {
	var bad []string
	for _, e := range l.Errors() {
		switch {
		case !e.Retryable:
			bad = append(bad, fmt.Sprintf("not retryable at +%v: %s", e.Ended.Sub(killed).Round(time.Millisecond), e.Err))
		case e.Ended.Before(killed):
			bad = append(bad, fmt.Sprintf("before the failover (%v before the kill): %s", killed.Sub(e.Ended).Round(time.Millisecond), e.Err))
		case e.Began.After(served.Add(grace)):
			bad = append(bad, fmt.Sprintf("after the failover (began %v after service resumed): %s", e.Began.Sub(served).Round(time.Millisecond), e.Err))
		}
	}
	if len(bad) > 0 {
		if len(bad) > 10 {
			bad = append(bad[:10], fmt.Sprintf("... and %d more", len(bad)-10))
		}
		return fmt.Errorf("%d errors do not fit the failover:\n%s", len(bad), strings.Join(bad, "\n"))
	}
	return nil
}
