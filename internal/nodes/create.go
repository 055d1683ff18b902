package nodes

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/flow"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// MaxBackoffFactor is the largest backoff factor.
const MaxBackoffFactor = 100

// MaxBatch is the most nodes one batch create may hold.
const MaxBatch = 1000

// IdempotencyWindow is how long an Idempotency-Key replays its first answer.
const IdempotencyWindow = 24 * time.Hour

// Idempotency names a create made under an Idempotency-Key: Key as the client
// sent it, and Hash, a digest of the whole request (which endpoint and what
// body), so a reuse with another request can be told apart.
type Idempotency struct {
	Key  string
	Hash string
}

// ValidIdempotencyKey reports whether k may be used as an Idempotency-Key.
func ValidIdempotencyKey(k string) bool {
	if k == "" || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// Create makes one node.
func (s *Service) Create(ctx context.Context, c Caller, spec NodeSpec, idem *Idempotency) (*records.Node, error) {
	nodes, err := s.CreateBatch(ctx, c, []NodeSpec{spec}, "", idem)
	if err != nil {
		return nil, err
	}
	return nodes[0], nil
}

// CreateBatch makes all the nodes or none. field prefixes validation errors
// ("items[3].") for batch bodies. With idem, a repeat of the same request
// within IdempotencyWindow returns the nodes the first one made and creates
// nothing; the same key with another request is a fault.IdempotencyMismatch.
func (s *Service) CreateBatch(ctx context.Context, c Caller, specs []NodeSpec, field string, idem *Idempotency) ([]*records.Node, error) {
	if len(specs) == 0 {
		return nil, fault.Invalidf("items", "must hold at least one node")
	}
	if len(specs) > MaxBatch {
		return nil, fault.Invalidf("items", "must hold at most %d nodes", MaxBatch)
	}
	def, err := s.defaults(ctx, c.Tenant)
	if err != nil {
		return nil, err
	}
	prepared := make([]*records.Node, len(specs))
	for i, spec := range specs {
		n, err := s.prepare(c, spec, def, itemPrefix(field, i, len(specs)))
		if err != nil {
			return nil, err
		}
		prepared[i] = n
	}
	keepTraceparent(ctx, prepared)
	var out []*records.Node
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error {
		if idem != nil {
			rec, err := tx.IdempotencyGet(c.Tenant, idem.Key, IdempotencyWindow)
			if err != nil {
				return err
			}
			if rec != nil {
				if rec.Hash != idem.Hash {
					return &fault.IdempotencyMismatch{Key: idem.Key}
				}
				out, err = replay(tx, c.Tenant, rec.NodeIDs)
				return err
			}
		}
		ids := make([]string, len(prepared))
		for i, n := range prepared {
			if err := checkBlobsExist(tx, c.Tenant, n.Blobs, itemPrefix(field, i, len(specs))); err != nil {
				return err
			}
			if err := s.insertTx(tx, c, n, specs[i].DependsOn); err != nil {
				return err
			}
			ids[i] = n.ID
		}
		out = prepared
		if idem == nil {
			return nil
		}
		return tx.IdempotencyPut(c.Tenant, idem.Key, &records.IdempotencyRecord{Hash: idem.Hash, NodeIDs: ids}, IdempotencyWindow)
	})
	if err != nil {
		return nil, fmt.Errorf("error creating nodes: %w", err)
	}
	return out, nil
}

// itemPrefix is what the field names of the i-th of n specs start with.
func itemPrefix(field string, i, n int) string {
	if n > 1 || field != "" {
		return fmt.Sprintf("items[%d].", i)
	}
	return field
}

// replay loads the nodes a first request made, as they are now.
func replay(tx *graphstore.Tx, tenant string, ids []string) ([]*records.Node, error) {
	out := make([]*records.Node, 0, len(ids))
	for _, id := range ids {
		n, err := tx.NodeGet(tenant, id)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// prepare validates spec and builds the node it describes (not yet stored).
func (s *Service) prepare(c Caller, spec NodeSpec, def Defaults, prefix string) (*records.Node, error) {
	now := s.store.Clock().Now().UTC()
	bad := func(f, format string, args ...any) error { return fault.Invalidf(prefix+f, format, args...) }
	n := &records.Node{
		Tenant: c.Tenant, Type: spec.Type, Labels: []string{}, Props: map[string]any{},
		Usage: map[string]float64{}, UsageTotal: map[string]float64{},
		MaxAttempts: def.MaxAttempts, OnChildFail: OnChildFailFail, CreatedBy: c.Sub,
	}
	if spec.Type == "" {
		return nil, bad("type", "is required")
	}
	if !graphstore.ValidType(spec.Type) || spec.Type == graphstore.IdentityType {
		return nil, bad("type", "must be 1-64 characters of [A-Za-z0-9._:-], not %q", graphstore.IdentityType)
	}
	if spec.ID != nil {
		if !graphstore.ValidClientID(*spec.ID) {
			return nil, bad("id", "must be 1-128 characters of [A-Za-z0-9._:-] starting with a letter or digit")
		}
		n.ID = *spec.ID
	} else {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		n.ID = id.String()
	}
	if spec.Title != nil {
		n.Title = *spec.Title
	}
	if spec.Body != nil {
		n.Body = *spec.Body
	}
	if spec.Queue != nil {
		if !graphstore.ValidQueue(*spec.Queue) {
			return nil, bad("queue", "must be 1-128 characters of [A-Za-z0-9._:-]")
		}
		n.Queue = *spec.Queue
	}
	if spec.Priority != nil {
		n.Priority = *spec.Priority
	}
	if spec.Target != nil {
		if problem := graphstore.SubjectProblem(*spec.Target); problem != "" {
			return nil, bad("target", "is not a valid identity: it %s", problem)
		}
		n.Target = *spec.Target
	}
	labels, err := validLabels(spec.Labels, prefix)
	if err != nil {
		return nil, err
	}
	n.Labels = labels
	if n.Blobs, err = validBlobs(spec.Blobs, prefix); err != nil {
		return nil, err
	}
	if n.ConcurrencyKeys, err = flow.ValidKeys(spec.ConcurrencyKeys, prefix+"concurrency_keys"); err != nil {
		return nil, err
	}
	if spec.Props != nil {
		n.Props = spec.Props
	}
	if spec.MaxAttempts != nil {
		if *spec.MaxAttempts < 1 {
			return nil, bad("max_attempts", "must be at least 1")
		}
		n.MaxAttempts = *spec.MaxAttempts
	}
	if spec.RunAt != nil && spec.DelayMS != nil {
		return nil, bad("delay_ms", "cannot be given together with run_at")
	}
	if spec.RunAt != nil {
		t := spec.RunAt.UTC()
		n.RunAt = &t
	}
	// The ranges of the millisecond fields are the duration package's, held
	// at decode; checking them again here keeps a spec built in code honest.
	for _, f := range []struct {
		name string
		v    *int64
	}{{"delay_ms", spec.DelayMS}, {"timeout_ms", spec.TimeoutMS}} {
		if f.v != nil {
			if err := duration.Check(prefix+f.name, *f.v); err != nil {
				return nil, err
			}
		}
	}
	if spec.DelayMS != nil {
		t := now.Add(ms(*spec.DelayMS))
		n.RunAt = &t
	}
	if spec.TimeoutMS != nil {
		n.TimeoutMS = spec.TimeoutMS
	}
	if spec.Backoff != nil {
		b := *spec.Backoff
		if err := duration.Check(prefix+"backoff.initial_ms", b.InitialMS); err != nil {
			return nil, err
		}
		if err := duration.Check(prefix+"backoff.max_ms", b.MaxMS); err != nil {
			return nil, err
		}
		switch {
		case b.MaxMS < b.InitialMS:
			return nil, bad("backoff.max_ms", "must be at least initial_ms")
		case !(b.Factor >= 1 && b.Factor <= MaxBackoffFactor):
			return nil, bad("backoff.factor", "must be a number from 1 to %d", MaxBackoffFactor)
		}
		n.Backoff = &b
	} else if def.Backoff != nil {
		b := *def.Backoff
		n.Backoff = &b
	}
	if spec.OnChildFail != nil {
		if *spec.OnChildFail != OnChildFailFail && *spec.OnChildFail != OnChildFailIgnore {
			return nil, bad("on_child_fail", "must be %q or %q", OnChildFailFail, OnChildFailIgnore)
		}
		n.OnChildFail = *spec.OnChildFail
	}
	if spec.Parent != nil {
		if !graphstore.ValidID(*spec.Parent) || *spec.Parent == n.ID {
			return nil, bad("parent", "is not a valid node id")
		}
		n.Parent = *spec.Parent
	}
	seen := map[string]bool{}
	for i, d := range spec.DependsOn {
		switch {
		case !graphstore.ValidID(d):
			return nil, bad(fmt.Sprintf("depends_on[%d]", i), "is not a valid node id")
		case graphstore.IsIdentityID(d):
			return nil, bad(fmt.Sprintf("depends_on[%d]", i), "identity nodes take no part in depends_on")
		case d == n.ID:
			return nil, bad(fmt.Sprintf("depends_on[%d]", i), "a node cannot depend on itself")
		case seen[d]:
			return nil, bad(fmt.Sprintf("depends_on[%d]", i), "%q is listed twice", d)
		}
		seen[d] = true
	}
	if !c.Dispatcher && n.Parent == "" {
		return nil, &fault.Forbidden{Reason: "a worker may only create children of a node it holds"}
	}
	if err := lifecycle.Create(n); err != nil {
		return nil, err
	}
	return n, nil
}

func validLabels(labels []string, prefix string) ([]string, error) {
	out := make([]string, 0, len(labels))
	for i, l := range labels {
		if l == "" || len(l) > 128 {
			return nil, fault.Invalidf(fmt.Sprintf("%slabels[%d]", prefix, i), "must be 1-128 characters")
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// insertTx stores a prepared node with its parent_of and depends_on edges.
func (s *Service) insertTx(tx *graphstore.Tx, c Caller, n *records.Node, deps []string) error {
	if n.Parent != "" {
		parent, err := tx.NodeGet(c.Tenant, n.Parent)
		if err != nil {
			return err
		}
		if graphstore.IsIdentityID(parent.ID) {
			return fault.Invalidf("parent", "an identity node cannot be a parent")
		}
		if !c.Dispatcher {
			if err := leasing.CheckHolder(parent, leasing.HolderParams{By: c.Sub}, tx.Now()); err != nil {
				return &fault.Forbidden{Reason: "a worker may only create children of a node it holds"}
			}
		}
	}
	if err := tx.NodeInsert(n, c.Sub); err != nil {
		return err
	}
	if n.Parent != "" {
		e := &records.Edge{From: n.Parent, Type: graphstore.EdgeParentOf, To: n.ID, CreatedBy: c.Sub}
		if err := tx.EdgeInsert(c.Tenant, e); err != nil {
			return err
		}
	}
	for _, d := range deps {
		e := &records.Edge{From: n.ID, Type: graphstore.EdgeDependsOn, To: d, CreatedBy: c.Sub, Props: map[string]any{"on_fail": OnFailCancel}}
		if err := tx.EdgeInsert(c.Tenant, e); err != nil {
			return err
		}
	}
	return nil
}
