package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/flow"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// NodePatch is a JSON merge patch of a node. A field that is present is set;
// a present null clears it (back to its default).
type NodePatch struct {
	fields map[string]json.RawMessage
}

// patchable lists the fields a patch may name, and whether a holder (not only
// a dispatcher) may change them.
var patchable = map[string]bool{
	"title": true, "body": true, "props": true, "labels": true, "blobs": true,
	"queue": false, "priority": false, "target": false, "max_attempts": false,
	"run_at": false, "timeout_ms": false, "concurrency_keys": false,
}

// DecodeNodePatch parses a merge patch body; unknown fields are rejected.
func DecodeNodePatch(raw []byte) (NodePatch, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return NodePatch{}, fault.Invalidf("", "the body must be a JSON object")
	}
	if dec.More() {
		return NodePatch{}, fault.Invalidf("", "the body must hold one JSON object")
	}
	for k := range fields {
		if _, ok := patchable[k]; !ok {
			return NodePatch{}, fault.Invalidf(k, "unknown field, or not changeable by PATCH")
		}
	}
	return NodePatch{fields: fields}, nil
}

// HolderOnly reports whether every field is one a lease holder may change.
func (p NodePatch) HolderOnly() bool {
	for k := range p.fields {
		if !patchable[k] {
			return false
		}
	}
	return true
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// ParseETag reads an If-Match value: "*", "7", "\"7\"" or W/"7". ok is false
// for anything else.
func ParseETag(v string) (version int64, any bool, ok bool) {
	v = strings.TrimSpace(v)
	if v == "*" {
		return 0, true, true
	}
	v = strings.TrimPrefix(v, "W/")
	v = strings.Trim(v, `"`)
	n, err := strconv.ParseInt(v, 10, 64)
	return n, false, err == nil
}

// PatchParams ask for a node change.
type PatchParams struct {
	Caller
	NodeID  string
	Patch   NodePatch
	IfMatch *int64 // nil: unconditional
}

// Patch applies a merge patch. A dispatcher may change every patchable field;
// the holder of the node's live lease only title, body, props, labels and
// blobs.
func (s *Service) Patch(ctx context.Context, p PatchParams) (*records.Node, error) {
	var out *records.Node
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(p.Tenant, p.NodeID)
		if err != nil {
			return err
		}
		if graphstore.IsIdentityID(n.ID) {
			return &fault.Conflict{Reason: "identity nodes are managed by the server"}
		}
		if !p.Dispatcher {
			if !p.Patch.HolderOnly() {
				return &fault.Forbidden{Reason: "a lease holder may change only title, body, props, labels and blobs"}
			}
			if err := leasing.CheckHolder(n, leasing.HolderParams{By: p.Sub}, tx.Now()); err != nil {
				return &fault.Forbidden{Reason: "only a dispatcher or the node's lease holder may change it"}
			}
		}
		if p.IfMatch != nil && *p.IfMatch != n.Version {
			return &fault.PreconditionFailed{Current: n.Version}
		}
		changed, err := applyPatch(n, p.Patch)
		if err != nil {
			return err
		}
		if len(changed) == 0 {
			out = n
			return nil
		}
		if err := checkBlobsExist(tx, p.Tenant, n.Blobs, ""); err != nil {
			return err
		}
		if err := tx.NodePut(n); err != nil {
			return err
		}
		out = n
		return tx.Emit(p.Tenant, records.EventUpdated, n.ID, p.Sub, map[string]any{"fields": changed})
	})
	if err != nil {
		return nil, fmt.Errorf("error patching node: %w", err)
	}
	return out, nil
}

func applyPatch(n *records.Node, p NodePatch) ([]string, error) {
	var changed []string
	keys := make([]string, 0, len(p.fields))
	for k := range p.fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		raw := p.fields[k]
		null := isNull(raw)
		bad := func(reason string) error { return fault.Invalidf(k, "%s", reason) }
		switch k {
		case "title", "body":
			var v string
			if !null && json.Unmarshal(raw, &v) != nil {
				return nil, bad("must be a string")
			}
			if k == "title" {
				n.Title = v
			} else {
				n.Body = v
			}
		case "queue":
			var v string
			if !null && (json.Unmarshal(raw, &v) != nil || !graphstore.ValidQueue(v)) {
				return nil, bad("must be 1-128 characters of [A-Za-z0-9._:-], or null")
			}
			lifecycle.MoveQueue(n, v)
		case "priority":
			var v int64
			if !null && json.Unmarshal(raw, &v) != nil {
				return nil, bad("must be an integer")
			}
			n.Priority = v
		case "target":
			var v string
			if !null && json.Unmarshal(raw, &v) != nil {
				return nil, bad("must be an identity, or null")
			}
			if problem := graphstore.SubjectProblem(v); !null && problem != "" {
				return nil, bad("must be an identity, or null: an identity " + problem)
			}
			n.Target = v
			if v == "" {
				n.SlotHeld = false // no one left to keep a hand-off's slots for
			}
		case "labels":
			var v []string
			if !null && json.Unmarshal(raw, &v) != nil {
				return nil, bad("must be an array of strings")
			}
			labels, err := validLabels(v, "")
			if err != nil {
				return nil, err
			}
			n.Labels = labels
		case "blobs":
			var v []string
			if !null && json.Unmarshal(raw, &v) != nil {
				return nil, bad("must be an array of sha256s")
			}
			blobs, err := validBlobs(v, "")
			if err != nil {
				return nil, err
			}
			n.Blobs = blobs
		case "concurrency_keys":
			var v []string
			if !null && json.Unmarshal(raw, &v) != nil {
				return nil, bad("must be an array of strings, or null")
			}
			keys, err := flow.ValidKeys(v, "concurrency_keys")
			if err != nil {
				return nil, err
			}
			// A running node's keys hold its slots: changing them would
			// move a live lease from one key's count to another's.
			if (!n.Status.AtRest() || n.SlotHeld) && !slices.Equal(keys, n.ConcurrencyKeys) {
				return nil, &fault.Conflict{Reason: "concurrency_keys change only while the node is queued or open"}
			}
			n.ConcurrencyKeys = keys
		case "props":
			if null {
				n.Props = map[string]any{}
				break
			}
			var v map[string]any
			if json.Unmarshal(raw, &v) != nil || v == nil {
				return nil, bad("must be an object, or null")
			}
			n.Props = mergePatch(n.Props, v)
		case "max_attempts":
			var v int64
			if null {
				return nil, bad("cannot be null")
			}
			if json.Unmarshal(raw, &v) != nil || v < 1 {
				return nil, bad("must be an integer of at least 1")
			}
			n.MaxAttempts = v
		case "run_at":
			if null {
				n.RunAt = nil
				break
			}
			var v time.Time
			if json.Unmarshal(raw, &v) != nil {
				return nil, bad("must be an RFC 3339 time, or null")
			}
			v = v.UTC()
			n.RunAt = &v
		case "timeout_ms":
			if null {
				n.TimeoutMS = nil
				break
			}
			var v int64
			if json.Unmarshal(raw, &v) != nil || duration.Check(k, v) != nil {
				r := duration.Of(k)
				return nil, bad(fmt.Sprintf("must be an integer from %d to %d (milliseconds), or null", r.Min, r.Max))
			}
			n.TimeoutMS = &v
		}
		changed = append(changed, k)
	}
	return changed, nil
}

// mergePatch applies RFC 7396 to an object.
func mergePatch(target map[string]any, patch map[string]any) map[string]any {
	if target == nil {
		target = map[string]any{}
	}
	for k, v := range patch {
		if v == nil {
			delete(target, k)
			continue
		}
		if pv, ok := v.(map[string]any); ok {
			tv, _ := target[k].(map[string]any)
			target[k] = mergePatch(tv, pv)
			continue
		}
		target[k] = v
	}
	return target
}
