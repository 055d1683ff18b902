package nodes

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/flow"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// QueueView is a queue as the API shows it.
type QueueView struct {
	Queue       string
	Paused      bool
	MaxRunning  int64
	Settings    records.QueueSettings
	Counts      map[records.Status]int64
	Ready       int
	OldestReady *time.Time
}

// QueuesPage is one page of the tenant's queues, by name, after the queue
// named in cursor ("" from the first), and the cursor of the next page (""
// at the end). limit is at most QueuesLimitMax (QueuesLimitDefault when 0).
func (s *Service) QueuesPage(tenant, cursor string, limit int) ([]QueueView, string, error) {
	if limit == 0 {
		limit = QueuesLimitDefault
	}
	if limit < 1 || limit > QueuesLimitMax {
		return nil, "", fault.Invalidf("limit", "must be an integer from 1 to %d", QueuesLimitMax)
	}
	after := ""
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		name, ok := strings.CutPrefix(string(raw), "q:")
		if err != nil || !ok || !graphstore.ValidQueue(name) {
			return nil, "", fault.Invalidf("cursor", "not a cursor of this list")
		}
		after = name
	}
	all, err := s.queues(tenant, func(name string) bool { return name > after })
	if err != nil {
		return nil, "", err
	}
	if len(all) <= limit {
		return all, "", nil
	}
	page := all[:limit]
	return page, base64.RawURLEncoding.EncodeToString([]byte("q:" + page[limit-1].Queue)), nil
}

// Queue pages: by default and at most.
const (
	QueuesLimitDefault = 100
	QueuesLimitMax     = 1000
)

// queues lists the tenant's queues that hold nodes or have settings and
// whose names keep accepts, by name.
func (s *Service) queues(tenant string, keep func(name string) bool) ([]QueueView, error) {
	byName := map[string]*QueueView{}
	var order []string
	for _, st := range s.store.QueueStats(tenant) {
		if !keep(st.Queue) {
			continue
		}
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
			if !keep(queue) {
				return nil
			}
			v, ok := byName[queue]
			if !ok {
				v = &QueueView{Queue: queue, Counts: map[records.Status]int64{}}
				byName[queue] = v
				order = append(order, queue)
			}
			v.Paused, v.MaxRunning, v.Settings = q.Paused, q.MaxRunning, q
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
	one, err := s.queues(tenant, func(name string) bool { return name == queue })
	if err != nil {
		return QueueView{}, err
	}
	if len(one) == 1 {
		return one[0], nil
	}
	return QueueView{Queue: queue, Counts: map[records.Status]int64{}}, nil
}

// QueueChange is a change of a queue's settings; nil fields stay.
type QueueChange struct {
	Paused           *bool
	MaxRunning       *int64
	MaxRunningPerKey *int64
	Fair             *bool
	AgeEveryMS       *int64
	// SetRate changes the start rate to Rate (nil removes it).
	SetRate bool
	Rate    *flow.Rate
}

// check reports the first bad value of ch, naming its member.
func (ch QueueChange) check() error {
	if ch.MaxRunning != nil && *ch.MaxRunning < 0 {
		return fault.Invalidf("max_running", "must be 0 (no cap) or more")
	}
	if ch.MaxRunningPerKey != nil && *ch.MaxRunningPerKey != 0 {
		if err := flow.CheckLimit("max_running_per_key", *ch.MaxRunningPerKey); err != nil {
			return err
		}
	}
	if ch.AgeEveryMS != nil && *ch.AgeEveryMS != 0 {
		if err := duration.Check("age_priority_every_ms", *ch.AgeEveryMS); err != nil {
			return err
		}
	}
	if ch.SetRate && ch.Rate != nil {
		return ch.Rate.Check("rate")
	}
	return nil
}

// apply writes ch into q.
func (ch QueueChange) apply(q *records.QueueSettings) {
	if ch.Paused != nil {
		q.Paused = *ch.Paused
	}
	if ch.MaxRunning != nil {
		q.MaxRunning = *ch.MaxRunning
	}
	if ch.MaxRunningPerKey != nil {
		q.MaxRunningPerKey = *ch.MaxRunningPerKey
	}
	if ch.Fair != nil {
		q.Fair = *ch.Fair
	}
	if ch.AgeEveryMS != nil {
		q.AgeEveryMS = *ch.AgeEveryMS
	}
	if ch.SetRate {
		q.RatePerSecond, q.RateBurst = 0, 0
		if ch.Rate != nil {
			q.RatePerSecond, q.RateBurst = ch.Rate.PerSecond, ch.Rate.Burst
		}
	}
}

// SetQueue changes a queue's settings and wakes its claimers.
func (s *Service) SetQueue(ctx context.Context, c Caller, queue string, ch QueueChange) (QueueView, error) {
	if !graphstore.ValidQueue(queue) {
		return QueueView{}, fault.Invalidf("queue", "must be 1-128 characters of [A-Za-z0-9._:-]")
	}
	if err := ch.check(); err != nil {
		return QueueView{}, err
	}
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		q, err := tx.QueueSettingsGet(c.Tenant, queue)
		if err != nil {
			return err
		}
		ch.apply(&q)
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
