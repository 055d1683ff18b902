package nodes

import (
	"context"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// Events returns up to limit events of tenant with seq > after, oldest first.
func (s *Service) Events(tenant string, after uint64, limit int) ([]records.Event, error) {
	var out []records.Event
	err := s.store.View(func(tx *graphstore.Tx) error {
		var err error
		out, err = tx.EventsAfter(tenant, after, limit)
		return err
	})
	return out, err
}

// WaitEvents is Events that, when there is nothing after `after`, waits for
// the next commit of an event of tenant until ctx ends (then none, and no
// error when ctx's deadline passed).
func (s *Service) WaitEvents(ctx context.Context, tenant string, after uint64, limit int) ([]records.Event, error) {
	return s.store.WaitEvents(ctx, tenant, after, limit)
}

// NodeEvents returns up to limit events of node id with seq > after, oldest
// first. Events are history: the events of a deleted node stay listable
// under its id. An id with neither a node nor any event is a
// fault.NotFound.
func (s *Service) NodeEvents(tenant, id string, after uint64, limit int) ([]records.Event, error) {
	var out []records.Event
	err := s.store.View(func(tx *graphstore.Tx) error {
		var err error
		if out, err = tx.NodeEvents(tenant, id, after, limit); err != nil || len(out) > 0 {
			return err
		}
		if ok, err := tx.NodeExists(tenant, id); err != nil || ok {
			return err
		}
		if after > 0 {
			if first, err := tx.NodeEvents(tenant, id, 0, 1); err != nil || len(first) > 0 {
				return err
			}
		}
		return &fault.NotFound{What: "node", ID: id}
	})
	return out, err
}
