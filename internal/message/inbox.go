package message

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

// InboxParams asks for one page of an inbox.
type InboxParams struct {
	Tenant, Sub string
	// Unread lists only messages not yet read.
	Unread bool
	// Thread lists only the messages of one thread ("" for all).
	Thread string
	// Node lists only the messages to that node, which sub must hold ("" for
	// the whole inbox: sub's own and those of every node it holds).
	Node   string
	Cursor string
	Limit  int
	// Wait, while the page would be empty, waits up to this long for a
	// message to arrive (a long poll).
	Wait time.Duration
}

func (p *InboxParams) validate() (*entry, error) {
	if p.Limit <= 0 {
		p.Limit = DefaultLimit
	}
	p.Limit = min(p.Limit, MaxLimit)
	switch {
	case p.Thread != "" && !ValidThread(p.Thread):
		return nil, fault.Invalidf("thread", "must be 1-128 characters of [A-Za-z0-9._:-] starting with a letter or digit")
	case p.Node != "" && !graphstore.ValidID(p.Node):
		return nil, fault.Invalidf("node", "is not a valid node id")
	}
	return decodeCursor(p.Cursor)
}

// Inbox returns one page of sub's inbox in inbox order (priority high
// first, then oldest, then id) and the cursor of the next page ("" at the
// end). Messages it lists for the first time are marked delivered to sub,
// durably, before it returns.
func (s *Service) Inbox(ctx context.Context, p InboxParams) ([]View, string, error) {
	pivot, err := p.validate()
	if err != nil {
		return nil, "", err
	}
	if p.Wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.Wait)
		defer cancel()
	}
	for {
		ch := s.hub.changed(p.Tenant)
		out, next, err := s.page(p, pivot)
		if err != nil {
			return nil, "", err
		}
		if len(out) > 0 || next != "" || p.Wait <= 0 {
			// The page is chosen: a wait running out now must not leave it
			// undelivered.
			out, err = s.deliver(context.WithoutCancel(ctx), p.Tenant, p.Sub, out)
			return out, next, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, "", nil
			}
			return nil, "", ctx.Err()
		}
	}
}

// page reads one page: the first Limit+1 entries after pivot from each
// recipient's tree, merged, and each record read from the store and
// checked again.
func (s *Service) page(p InboxParams, pivot *entry) ([]View, string, error) {
	var out []View
	next := ""
	err := s.store.View(func(tx *graphstore.Tx) error {
		now := tx.Now()
		var keys []boxKey
		if p.Node == "" {
			keys = s.recipients(tx, p.Tenant, p.Sub, now)
		} else if holds(tx, p.Tenant, p.Node, p.Sub, now) {
			keys = []boxKey{nodeBox(p.Tenant, p.Node)}
		}
		var cands []entry
		s.ix.mu.Lock()
		for _, k := range keys {
			cands = append(cands, s.ix.pick(k, p.Thread, p.Unread, pivot, p.Limit+1)...)
		}
		s.ix.mu.Unlock()
		slices.SortFunc(cands, func(a, b entry) int {
			if lessEntry(a, b) {
				return -1
			}
			if lessEntry(b, a) {
				return 1
			}
			return 0
		})
		if len(cands) > p.Limit {
			cands = cands[:p.Limit]
			next = encodeCursor(cands[p.Limit-1])
		}
		for _, e := range cands {
			var r Record
			found, err := tx.Records().MessageGet(p.Tenant, e.id, &r)
			if err != nil {
				return err
			}
			// The index changes only once a write is durable, so the record
			// agrees with it; these checks keep a page right regardless.
			if !found || r.expired(now) || (p.Unread && r.ReadAt != nil) || (p.Thread != "" && r.Thread != p.Thread) {
				continue
			}
			out = append(out, View{Record: r, State: r.StateAt(now)})
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("error reading an inbox: %w", err)
	}
	return out, next, nil
}

// deliver marks the messages of a page that no inbox listed before as
// delivered to sub, and returns the page as stored.
func (s *Service) deliver(ctx context.Context, tenant, sub string, page []View) ([]View, error) {
	var fresh []int
	for i, v := range page {
		if v.DeliveredAt == nil {
			fresh = append(fresh, i)
		}
	}
	if len(fresh) == 0 {
		return page, nil
	}
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		now := tx.Now().UTC()
		for _, i := range fresh {
			var r Record
			found, err := tx.Records().MessageGet(tenant, page[i].ID, &r)
			if err != nil {
				return err
			}
			if found && r.DeliveredAt == nil {
				r.DeliveredAt, r.DeliveredTo = &now, sub
				if err := tx.Records().MessagePut(tenant, r.ID, &r, r.keepFor(now)); err != nil {
					return err
				}
			}
			if found {
				page[i] = View{Record: r, State: r.StateAt(now)}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error marking messages delivered: %w", err)
	}
	return page, nil
}

// A cursor is the inbox position of the last message of a page.
func encodeCursor(e entry) string {
	raw := "m:" + strconv.FormatInt(e.priority, 10) + ":" + strconv.FormatInt(e.created, 10) + ":" + e.id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeCursor(cursor string) (*entry, error) {
	if cursor == "" {
		return nil, nil
	}
	bad := fault.Invalidf("cursor", "not a cursor of this list")
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, bad
	}
	parts := strings.SplitN(string(raw), ":", 4)
	if len(parts) != 4 || parts[0] != "m" || parts[3] == "" {
		return nil, bad
	}
	prio, err1 := strconv.ParseInt(parts[1], 10, 64)
	created, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, bad
	}
	return &entry{priority: prio, created: created, id: parts[3]}, nil
}
