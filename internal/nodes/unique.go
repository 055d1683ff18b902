package nodes

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// The create rules over a unique key:
//
//   - unique: a create with unique.key, while the node last made under the
//     key is within the window_ms of that node's create (default
//     DefaultUniqueWindow, at most the tenant's retention) and in one of
//     the statuses of that create's while (default open, queued, running),
//     makes nothing and answers that node (a duplicate). Otherwise it makes
//     a node, which the key names from then on.
//   - debounce_ms (with unique.key, without window_ms and while): the node
//     made waits debounce_ms (its run_at); a create with the key before
//     that has passed, while the node is still at rest (not claimed),
//     replaces the node's body and props with its own (those it gives) and
//     pushes its run_at to now + its debounce_ms, answering the node as a
//     duplicate. Once the wait has passed, or the node was claimed, a
//     create makes a new node.
//
// The key's record (records.UniqueRecord) is written in the transaction
// that makes the node, on the store's single writer, so concurrent creates
// with one key make one node. A record is trusted only while its node
// exists and still carries the key (a node re-created under the id does
// not).

// MaxUniqueKeyLength is the longest unique key, in bytes.
const MaxUniqueKeyLength = 256

// DefaultUniqueWindow is the unique window of a create that names none
// (shortened to the tenant's retention when that is shorter).
const DefaultUniqueWindow = 24 * time.Hour

// defaultUniqueWhile are the statuses during which a node holds its key
// when the create names none: until it ends.
var defaultUniqueWhile = []records.Status{records.StatusOpen, records.StatusQueued, records.StatusRunning}

// createRule is what prepare made of a create's unique and debounce_ms.
type createRule struct {
	key      string
	window   time.Duration
	while    []records.Status
	debounce time.Duration // 0: none
}

// prepareRules validates spec's unique, debounce_ms, start_by and
// queue_ttl_ms and sets n's unique key, start_by and (for a debounce) run_at.
func prepareRules(spec NodeSpec, def Defaults, n *records.Node, now time.Time, prefix string) (*createRule, error) {
	bad := func(f, format string, args ...any) error { return fault.Invalidf(prefix+f, format, args...) }
	var rule *createRule
	if u := spec.Unique; u != nil {
		if err := validUniqueKey(u.Key); err != "" {
			return nil, bad("unique.key", "%s", err)
		}
		rule = &createRule{key: u.Key, window: DefaultUniqueWindow, while: defaultUniqueWhile}
		if def.Retention > 0 {
			rule.window = min(rule.window, def.Retention)
		}
		if u.WindowMS != nil {
			if err := duration.Check(prefix+"unique.window_ms", *u.WindowMS); err != nil {
				return nil, err
			}
			rule.window = ms(*u.WindowMS)
			if def.Retention > 0 && rule.window > def.Retention {
				return nil, bad("unique.window_ms", "must be at most the tenant's retention_ms, %d", def.Retention.Milliseconds())
			}
		}
		if u.While != nil {
			if len(u.While) == 0 {
				return nil, bad("unique.while", "must name at least one status")
			}
			rule.while = make([]records.Status, 0, len(u.While))
			for i, w := range u.While {
				st := records.Status(w)
				switch {
				case !st.Valid():
					return nil, bad(fmt.Sprintf("unique.while[%d]", i), "must be a node status, not %q", w)
				case slices.Contains(rule.while, st):
					return nil, bad(fmt.Sprintf("unique.while[%d]", i), "%q is listed twice", w)
				}
				rule.while = append(rule.while, st)
			}
		}
	}
	if spec.DebounceMS != nil {
		switch {
		case rule == nil:
			return nil, bad("debounce_ms", "needs unique.key: the key names what a later create replaces")
		case spec.Unique.WindowMS != nil:
			return nil, bad("unique.window_ms", "cannot be given with debounce_ms: the debounce is the window")
		case spec.Unique.While != nil:
			return nil, bad("unique.while", "cannot be given with debounce_ms: a debounce replaces a node only while it waits")
		case spec.RunAt != nil || spec.DelayMS != nil:
			return nil, bad("debounce_ms", "cannot be given with run_at or delay_ms: the debounce sets run_at")
		}
		if err := duration.Check(prefix+"debounce_ms", *spec.DebounceMS); err != nil {
			return nil, err
		}
		rule.debounce = ms(*spec.DebounceMS)
		rule.window, rule.while = 0, nil
		at := now.Add(rule.debounce)
		n.RunAt = &at
	}
	if rule != nil {
		n.UniqueKey = rule.key
	}
	if spec.StartBy != nil && spec.QueueTTLMS != nil {
		return nil, bad("queue_ttl_ms", "cannot be given together with start_by")
	}
	if spec.QueueTTLMS != nil {
		if err := duration.Check(prefix+"queue_ttl_ms", *spec.QueueTTLMS); err != nil {
			return nil, err
		}
		at := now.Add(ms(*spec.QueueTTLMS))
		n.StartBy = &at
	}
	if spec.StartBy != nil {
		at := spec.StartBy.UTC()
		if !at.After(now) {
			return nil, bad("start_by", "must be in the future")
		}
		n.StartBy = &at
	}
	if n.StartBy != nil && n.RunAt != nil && !n.StartBy.After(*n.RunAt) {
		field := "start_by"
		if spec.QueueTTLMS != nil {
			field = "queue_ttl_ms"
		}
		return nil, bad(field, "must end after run_at (%s): the node could never be claimed", records.Stamp(*n.RunAt))
	}
	return rule, nil
}

// validUniqueKey says what is wrong with k as a unique key ("" for nothing).
func validUniqueKey(k string) string {
	switch {
	case k == "":
		return "is required"
	case len(k) > MaxUniqueKeyLength:
		return fmt.Sprintf("must be at most %d bytes", MaxUniqueKeyLength)
	case !utf8.ValidString(k):
		return "must be valid UTF-8"
	}
	for _, r := range k {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return "must hold no control characters"
		}
	}
	return ""
}

// uniqueMatchTx finds the node a create under rule answers instead of
// making one: a duplicate, left as it is, or a node debounced into, with
// spec's body and props and a pushed run_at (written here, with an updated
// event). nil: the create makes a node.
func (s *Service) uniqueMatchTx(tx *graphstore.Tx, c Caller, rule *createRule, spec NodeSpec) (*records.Node, error) {
	rec, err := tx.UniqueGet(c.Tenant, rule.key)
	if err != nil || rec == nil {
		return nil, err
	}
	n, err := tx.NodeGet(c.Tenant, rec.NodeID)
	if _, gone := err.(*fault.NotFound); gone {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if n.UniqueKey != rule.key {
		return nil, nil
	}
	now := tx.Now()
	if rec.DebounceMS > 0 {
		if !n.Status.AtRest() || !now.Before(rec.LastAt.Add(ms(rec.DebounceMS))) {
			return nil, nil
		}
		return n, s.debounceTx(tx, c, n, rec, rule, spec)
	}
	if !now.Before(rec.CreatedAt.Add(ms(rec.WindowMS))) || !slices.Contains(rec.While, n.Status) {
		return nil, nil
	}
	return n, nil
}

// debounceTx replaces n's body and props with those spec gives and pushes
// its run_at by the debounce of this create (the record's, for a create
// with the key and none of its own), with an updated event. Its start_by
// stays where the first create put it.
func (s *Service) debounceTx(tx *graphstore.Tx, c Caller, n *records.Node, rec *records.UniqueRecord, rule *createRule, spec NodeSpec) error {
	now := tx.Now()
	wait := rule.debounce
	if wait == 0 {
		wait = ms(rec.DebounceMS)
	}
	fields := []string{}
	if spec.Body != nil {
		n.Body = *spec.Body
		fields = append(fields, "body")
	}
	if spec.Props != nil {
		n.Props = spec.Props
		fields = append(fields, "props")
	}
	at := now.Add(wait).UTC()
	n.RunAt = &at
	fields = append(fields, "run_at")
	if err := tx.NodePut(n); err != nil {
		return err
	}
	if err := tx.Emit(c.Tenant, records.EventUpdated, n.ID, c.Sub, map[string]any{"fields": fields, "debounced": true}); err != nil {
		return err
	}
	rec.LastAt, rec.DebounceMS = now.UTC(), wait.Milliseconds()
	return tx.UniquePut(c.Tenant, rule.key, rec, wait)
}

// uniquePutTx names n as the node of rule's key, made now.
func uniquePutTx(tx *graphstore.Tx, tenant string, rule *createRule, n *records.Node) error {
	now := tx.Now().UTC()
	rec := &records.UniqueRecord{NodeID: n.ID, CreatedAt: now, LastAt: now,
		WindowMS: rule.window.Milliseconds(), While: rule.while, DebounceMS: rule.debounce.Milliseconds()}
	return tx.UniquePut(tenant, rule.key, rec, max(rule.window, rule.debounce))
}
