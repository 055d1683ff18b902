// Package clocktest provides a manually advanced clock for tests.
package clocktest

import (
	"sort"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/clock"
)

// Fake is a clock that moves only when Advance or Set is called. Timers whose
// deadline is reached fire synchronously-started goroutines in deadline order.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

var _ clock.Clock = (*Fake)(nil)

// New returns a fake clock set to start.
func New(start time.Time) *Fake { return &Fake{now: start} }

type fakeTimer struct {
	c       *Fake
	at      time.Time
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc registers f to run once the fake time reaches now+d.
func (c *Fake) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	if d <= 0 {
		c.Advance(0)
	}
	return t
}

// Advance moves time forward by d and runs every timer that became due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			due = append(due, t)
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		go t.f()
	}
}

// Pending reports how many timers are armed and not yet fired or stopped.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}
