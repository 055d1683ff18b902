package nodes

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// QueueView is a queue as the API shows it.
type QueueView struct {
	Queue       string
	Paused      bool
	MaxRunning  int64
	Counts      map[records.Status]int64
	Ready       int
	OldestReady *time.Time
}

// Queues lists the tenant's queues: every queue that holds nodes or has
// settings, by name.
func (s *Service) Queues(tenant string) ([]QueueView, error) {
	byName := map[string]*QueueView{}
	var order []string
	for _, st := range s.store.QueueStats(tenant) {
		v := &QueueView{Queue: st.Queue, Counts: st.Counts, Ready: st.Ready}
		if !st.OldestReady.IsZero() {
			t := st.OldestReady
			v.OldestReady = &t
		}
		byName[st.Queue] = v
		order = append(order, st.Queue)
	}
	err := s.store.View(func(tx *graphstore.Tx) error {
		return tx.QueueSettingsList(tenant, func(queue string, q records.QueueSettings) error {
			v, ok := byName[queue]
			if !ok {
				v = &QueueView{Queue: queue, Counts: map[records.Status]int64{}}
				byName[queue] = v
				order = append(order, queue)
			}
			v.Paused, v.MaxRunning = q.Paused, q.MaxRunning
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	out := make([]QueueView, 0, len(order))
	for _, name := range sortedUnique(order) {
		v := byName[name]
		if v.Paused {
			v.Ready = 0
			v.OldestReady = nil
		}
		out = append(out, *v)
	}
	return out, nil
}

// Queue returns one queue's view (zero counts when it holds nothing).
func (s *Service) Queue(tenant, queue string) (QueueView, error) {
	all, err := s.Queues(tenant)
	if err != nil {
		return QueueView{}, err
	}
	for _, v := range all {
		if v.Queue == queue {
			return v, nil
		}
	}
	return QueueView{Queue: queue, Counts: map[records.Status]int64{}}, nil
}

// QueueChange is a change of a queue's settings; nil fields stay.
type QueueChange struct {
	Paused     *bool
	MaxRunning *int64
}

// SetQueue changes a queue's settings and wakes its claimers.
func (s *Service) SetQueue(ctx context.Context, c Caller, queue string, ch QueueChange) (QueueView, error) {
	if !graphstore.ValidQueue(queue) {
		return QueueView{}, fault.Invalidf("queue", "must be 1-128 characters of [A-Za-z0-9._:-]")
	}
	if ch.MaxRunning != nil && *ch.MaxRunning < 0 {
		return QueueView{}, fault.Invalidf("max_running", "must be 0 (no cap) or more")
	}
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		q, err := tx.QueueSettingsGet(c.Tenant, queue)
		if err != nil {
			return err
		}
		if ch.Paused != nil {
			q.Paused = *ch.Paused
		}
		if ch.MaxRunning != nil {
			q.MaxRunning = *ch.MaxRunning
		}
		return tx.QueueSettingsPut(c.Tenant, queue, q)
	})
	if err != nil {
		return QueueView{}, fmt.Errorf("error changing queue: %w", err)
	}
	s.store.Kick(c.Tenant, queue)
	return s.Queue(c.Tenant, queue)
}

func sortedUnique(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}
