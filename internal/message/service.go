package message

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/startstop"
	"github.com/tether-run/tether/internal/testsignal"
)

// The events a message to a node appends to that node's events.
const (
	EventSent records.EventType = "message_sent"
	EventRead records.EventType = "message_read"
)

// Stats are running totals for metrics, since the server started.
type Stats struct {
	Sent    atomic.Int64
	Read    atomic.Int64
	Expired atomic.Int64 // messages whose ttl passed unread
}

// Service sends, lists and acknowledges messages.
type Service struct {
	// The expiry sweep's timer runs between Start and Stop (startstop's).
	startstop.BaseStartStop

	// TestSignals tell tests that a timed sweep ran; off unless a test
	// enables them.
	TestSignals TestSignals

	store *graphstore.Store
	clock clock.Clock
	ix    *index
	hub   *hub
	stats Stats

	timerMu sync.Mutex
	timer   clock.Timer
	timerAt time.Time
	running bool      // between Start and Stop: arm arms the timer
	pending time.Time // the earliest sweep asked for while not running
}

// TestSignals are the message sweep's signals to tests.
type TestSignals struct {
	// Swept is sent after each timed sweep, with when the next is due
	// (zero: nothing left to expire).
	Swept testsignal.Signal[time.Time]
}

// New builds the service on store, rebuilding the inbox indexes from the
// stored messages. Start begins the timed sweep of expired messages and
// Stop ends it.
func New(store *graphstore.Store) (*Service, error) {
	s := &Service{store: store, clock: store.Clock(), hub: newHub()}
	s.ix = newIndex(func() { s.stats.Expired.Add(1) })
	// Unread messages to nodes that are gone: removed before removals
	// expired them (gone.go), by a server older than that.
	orphans := map[string][]string{} // tenant -> ids
	err := store.View(func(tx *graphstore.Tx) error {
		now := tx.Now()
		return tx.Records().MessageScanAll(func(tenant string, raw []byte) (bool, error) {
			var r Record
			if _, err := r.UnmarshalMsg(raw); err != nil {
				return false, fmt.Errorf("error decoding a message record: %w", err)
			}
			forget := r.forgetAt()
			if !forget.IsZero() && !now.Before(forget) {
				return true, nil // gone already (an expiry while down is not counted)
			}
			s.ix.add(placedOf(tenant, &r), r.ReadAt != nil, forget)
			if node := r.Node(); node != "" && r.ReadAt == nil {
				exists, err := tx.NodeExists(tenant, node)
				if err != nil {
					return false, err
				}
				if !exists {
					orphans[tenant] = append(orphans[tenant], r.ID)
				}
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("error rebuilding the inbox indexes: %w", err)
	}
	if len(orphans) > 0 {
		err := store.Update(context.Background(), func(tx *graphstore.Tx) error {
			for tenant, ids := range orphans {
				if err := s.expireUnread(tx, tenant, ids); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("error expiring the messages to removed nodes: %w", err)
		}
	}
	store.OnNodeGone(s.nodeGone)
	s.ix.mu.Lock()
	next := s.ix.sweep(s.clock.Now())
	s.ix.mu.Unlock()
	s.arm(next)
	return s, nil
}

// Start arms the timed sweep of expired messages (the sweep is in memory:
// it counts expiries and drops them from the index, and writes nothing).
func (s *Service) Start(ctx context.Context) error {
	ctx, ok, started, stopped := s.StartInit(ctx)
	if !ok {
		return nil
	}
	s.timerMu.Lock()
	s.running = true
	at := s.pending
	s.pending = time.Time{}
	s.timerMu.Unlock()
	s.arm(at)
	go func() {
		started()
		defer stopped()
		<-ctx.Done()
		s.timerMu.Lock()
		defer s.timerMu.Unlock()
		s.running = false
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
	}()
	return nil
}

// Stats returns the running totals.
func (s *Service) Stats() *Stats { return &s.stats }

// SendParams is one message to send.
type SendParams struct {
	Tenant   string
	From     string // the authenticated identity
	To       string // "<sub>" or "node:<id>"
	Body     string
	Priority int64
	Thread   string        // "" for none
	TTL      time.Duration // 0: it never expires
}

func (p SendParams) validate() (node string, err error) {
	node, problem := parseTo(p.To)
	switch {
	case p.To == "":
		return "", fault.Invalidf("to", "is required")
	case problem != "":
		return "", fault.Invalidf("to", "%s", problem)
	case p.Body == "":
		return "", fault.Invalidf("body", "is required")
	case utf8.RuneCountInString(p.Body) > MaxBody:
		return "", fault.Invalidf("body", "must be 1-%d characters", MaxBody)
	case p.Priority < -MaxPriority || p.Priority > MaxPriority:
		return "", fault.Invalidf("priority", "must be from %d to %d", -MaxPriority, MaxPriority)
	case p.Thread != "" && !ValidThread(p.Thread):
		return "", fault.Invalidf("thread", "must be 1-128 characters of [A-Za-z0-9._:-] starting with a letter or digit")
	case p.TTL < 0 || p.TTL > MaxTTL:
		return "", fault.Invalidf("ttl_ms", "must be from 1 to %d", MaxTTL.Milliseconds())
	}
	return node, nil
}

// Send stores a message. One to a node needs the node to exist, and appends
// message_sent to its events in the same transaction.
func (s *Service) Send(ctx context.Context, p SendParams) (*Record, error) {
	node, err := p.validate()
	if err != nil {
		return nil, err
	}
	uid, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	var rec Record
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error {
		if node != "" {
			if _, err := tx.NodeGet(p.Tenant, node); err != nil {
				return err
			}
		}
		now := tx.Now().UTC()
		rec = Record{
			ID: uid.String(), From: p.From, To: p.To, Body: p.Body, Priority: p.Priority,
			Thread: p.Thread, CreatedAt: now,
		}
		if p.TTL > 0 {
			exp := now.Add(p.TTL)
			rec.ExpiresAt = &exp
		}
		if err := tx.Records().MessagePut(p.Tenant, rec.ID, &rec, rec.keepFor(now)); err != nil {
			return err
		}
		if node != "" {
			data := map[string]any{"message_id": rec.ID, "priority": rec.Priority}
			if rec.Thread != "" {
				data["thread"] = rec.Thread
			}
			if err := tx.Emit(p.Tenant, EventSent, node, p.From, data); err != nil {
				return err
			}
		}
		pl, forget := placedOf(p.Tenant, &rec), rec.forgetAt()
		if node != "" {
			tx.OnCommit(func() {
				s.ix.mu.Lock()
				s.ix.sendingAdd(pl.key, rec.ID)
				s.ix.mu.Unlock()
			})
		}
		tx.OnDurable(func() {
			s.ix.mu.Lock()
			s.ix.sendingDone(pl.key, rec.ID)
			s.ix.add(pl, false, forget)
			s.ix.mu.Unlock()
			s.arm(forget)
			s.stats.Sent.Add(1)
			s.hub.publish(p.Tenant)
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error sending a message: %w", err)
	}
	return &rec, nil
}

// Viewer is who asks for a message.
type Viewer struct {
	Tenant, Sub string
	// All sees every message of the tenant (a dispatcher or admin).
	All bool
}

// View is a message as seen at one instant.
type View struct {
	Record
	State State
}

// Get returns message id if v may see it (see the package doc), else a
// fault.NotFound.
func (s *Service) Get(v Viewer, id string) (View, error) {
	var out View
	err := s.store.View(func(tx *graphstore.Tx) error {
		var r Record
		found, err := tx.Records().MessageGet(v.Tenant, id, &r)
		if err != nil {
			return err
		}
		now := tx.Now()
		if !found || !(v.All || r.From == v.Sub || r.DeliveredTo == v.Sub || r.ReadBy == v.Sub || holdsFor(tx, v.Tenant, v.Sub, &r, now)) {
			return &fault.NotFound{What: "message", ID: id}
		}
		out = View{Record: r, State: r.StateAt(now)}
		return nil
	})
	return out, err
}

// Ack records that sub read message id: its read receipt. Only a recipient
// may (the identity it is addressed to, or the live holder of its node); an
// expired message is gone (fault.NotFound). Acknowledging a message already
// read answers it unchanged.
func (s *Service) Ack(ctx context.Context, tenant, sub, id string) (View, error) {
	var out View
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		var r Record
		found, err := tx.Records().MessageGet(tenant, id, &r)
		if err != nil {
			return err
		}
		now := tx.Now().UTC()
		switch {
		case found && r.ReadAt != nil && (r.ReadBy == sub || holdsFor(tx, tenant, sub, &r, now)):
			out = View{Record: r, State: StateRead}
			return nil
		case !found || r.ReadAt != nil || r.expired(now) || !holdsFor(tx, tenant, sub, &r, now):
			return &fault.NotFound{What: "message", ID: id}
		}
		r.ReadAt, r.ReadBy = &now, sub
		if r.DeliveredAt == nil {
			r.DeliveredAt, r.DeliveredTo = &now, sub
		}
		if err := tx.Records().MessagePut(tenant, id, &r, r.keepFor(now)); err != nil {
			return err
		}
		if node := r.Node(); node != "" {
			if err := tx.Emit(tenant, EventRead, node, sub, map[string]any{"message_id": id, "from": r.From}); err != nil {
				return err
			}
		}
		out = View{Record: r, State: StateRead}
		pl, forget := placedOf(tenant, &r), r.forgetAt()
		tx.OnDurable(func() {
			s.ix.mu.Lock()
			s.ix.markRead(pl, forget)
			s.ix.mu.Unlock()
			s.arm(forget)
			s.stats.Read.Add(1)
		})
		return nil
	})
	if err != nil {
		return View{}, fmt.Errorf("error acknowledging a message: %w", err)
	}
	return out, nil
}

// holdsFor reports whether sub is a recipient of r at now: the identity it
// is addressed to, or the live holder of its node. A message to a node is
// never its identity's, whatever sub spells.
func holdsFor(tx *graphstore.Tx, tenant, sub string, r *Record, now time.Time) bool {
	if node, ok := r.toNode(); ok {
		return holds(tx, tenant, node, sub, now)
	}
	return r.To == sub
}

// holds reports whether sub holds a live lease on node at now.
func holds(tx *graphstore.Tx, tenant, node, sub string, now time.Time) bool {
	n, err := tx.NodeGet(tenant, node)
	return err == nil && leasing.Live(n, now) && n.Lease.By == sub
}

// Unread is how many unread messages sub has, addressed to it and, when
// node is set, to node (a node the caller knows sub holds): O(1).
func (s *Service) Unread(tenant, sub, node string) int64 {
	s.ix.mu.Lock()
	next := s.ix.sweep(s.clock.Now())
	n := s.ix.unread(identityBox(tenant, sub))
	if node != "" {
		n += s.ix.unread(nodeBox(tenant, node))
	}
	s.ix.mu.Unlock()
	s.arm(next)
	return n
}

// UnreadAll is how many unread messages sub's inbox holds: addressed to it
// and to every node it holds. O(held).
func (s *Service) UnreadAll(tenant, sub string) (int64, error) {
	var n int64
	err := s.store.View(func(tx *graphstore.Tx) error {
		now := tx.Now()
		for _, k := range s.recipients(tx, tenant, sub, now) {
			s.ix.mu.Lock()
			n += s.ix.unread(k)
			s.ix.mu.Unlock()
		}
		return nil
	})
	return n, err
}

// recipients are the boxes sub reads: its own and those of the nodes it
// holds at now that have messages.
func (s *Service) recipients(tx *graphstore.Tx, tenant, sub string, now time.Time) []boxKey {
	keys := []boxKey{identityBox(tenant, sub)}
	var nodes []string
	s.ix.mu.Lock()
	s.arm(s.ix.sweep(now))
	for _, id := range tx.HeldNodeIDs(tenant, sub) {
		if _, ok := s.ix.boxes[nodeBox(tenant, id)]; ok {
			nodes = append(nodes, id)
		}
	}
	s.ix.mu.Unlock()
	for _, id := range nodes {
		if holds(tx, tenant, id, sub, now) {
			keys = append(keys, nodeBox(tenant, id))
		}
	}
	return keys
}

// arm makes sure the sweep runs at `at` (zero: nothing to do), so expired
// messages are counted even when nobody reads.
func (s *Service) arm(at time.Time) {
	if at.IsZero() {
		return
	}
	s.timerMu.Lock()
	defer s.timerMu.Unlock()
	if !s.running {
		if s.pending.IsZero() || at.Before(s.pending) {
			s.pending = at
		}
		return
	}
	if s.timer != nil && !s.timerAt.After(at) {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timerAt = at
	s.timer = s.clock.AfterFunc(at.Sub(s.clock.Now()), func() {
		s.timerMu.Lock()
		if s.timerAt.Equal(at) {
			s.timer = nil // not one armed since
		}
		s.timerMu.Unlock()
		s.ix.mu.Lock()
		next := s.ix.sweep(s.clock.Now())
		s.ix.mu.Unlock()
		s.arm(next)
		s.TestSignals.Swept.Signal(next)
	})
}
