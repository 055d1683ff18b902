package graph

import (
	"encoding/binary"
	"encoding/json"
	"regexp"
	"time"

	"github.com/tether-run/tether/fault"
)

// Status is a node's place in its lifecycle.
type Status string

// The statuses. open, queued and running are live; the rest are terminal.
const (
	StatusOpen      Status = "open"      // no queue, at rest
	StatusQueued    Status = "queued"    // waiting in its queue
	StatusRunning   Status = "running"   // a live lease
	StatusDone      Status = "done"      // completed
	StatusFailed    Status = "failed"    // failed without requeue
	StatusDead      Status = "dead"      // out of attempts
	StatusCancelled Status = "cancelled" // cancelled
)

// Statuses lists every status.
func Statuses() []Status {
	return []Status{StatusOpen, StatusQueued, StatusRunning, StatusDone, StatusFailed, StatusDead, StatusCancelled}
}

// Terminal reports whether no further run can happen without a requeue.
func (s Status) Terminal() bool {
	switch s {
	case StatusDone, StatusFailed, StatusDead, StatusCancelled:
		return true
	}
	return false
}

// AtRest reports whether a node in s waits to run (open or queued): the only
// statuses from which it can be ready or claimed.
func (s Status) AtRest() bool { return s == StatusOpen || s == StatusQueued }

// RestStatus is where n waits when it is not running: queued in its queue,
// or open without one.
func (n *Node) RestStatus() Status {
	if n.Queue != "" {
		return StatusQueued
	}
	return StatusOpen
}

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses() {
		if s == v {
			return true
		}
	}
	return false
}

// Backoff is the delay before a failed run is retried: initial_ms, then
// multiplied by factor per attempt, capped at max_ms.
type Backoff struct {
	InitialMS int64   `json:"initial_ms"`
	MaxMS     int64   `json:"max_ms"`
	Factor    float64 `json:"factor"`
}

// Lease is the live claim on a node. It is stored inside the node record so a
// claim is one write; the lease package owns what it means.
type Lease struct {
	By        string    `json:"by"`
	Session   string    `json:"session,omitempty"`
	Fence     uint64    `json:"fence"`
	TTLMS     int64     `json:"ttl_ms"`
	ClaimedAt time.Time `json:"claimed_at"`
	RenewedAt time.Time `json:"renewed_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Progress is the last progress report of the running attempt.
type Progress struct {
	Pct       *float64  `json:"pct,omitempty"`
	Message   string    `json:"message,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RunEnd records how the latest run ended, so that a retried completion by
// the same holder and fence can be recognised and answered again.
type RunEnd struct {
	By      string    `json:"by"`
	Fence   uint64    `json:"fence"`
	Outcome string    `json:"outcome"`
	At      time.Time `json:"at"`
}

// Node is a work item as stored. Computed fields (ready, blocked_by) are not
// stored; see Readiness.
type Node struct {
	Tenant      string             `json:"tenant"`
	ID          string             `json:"id"`
	Type        string             `json:"type"`
	Title       string             `json:"title"`
	Body        string             `json:"body"`
	Status      Status             `json:"status"`
	Queue       string             `json:"queue,omitempty"`
	Priority    int64              `json:"priority"`
	Target      string             `json:"target,omitempty"`
	Labels      []string           `json:"labels"`
	Props       map[string]any     `json:"props"`
	Attempts    int64              `json:"attempts"`
	MaxAttempts int64              `json:"max_attempts"`
	RunAt       *time.Time         `json:"run_at,omitempty"`
	TimeoutMS   *int64             `json:"timeout_ms,omitempty"`
	Backoff     *Backoff           `json:"backoff,omitempty"`
	Parent      string             `json:"parent,omitempty"`
	OnChildFail string             `json:"on_child_fail"`
	Lease       *Lease             `json:"lease,omitempty"`
	LastFence   uint64             `json:"last_fence"`
	Result      json.RawMessage    `json:"result,omitempty"`
	Error       *string            `json:"error,omitempty"`
	Progress    *Progress          `json:"progress,omitempty"`
	LastRun     *RunEnd            `json:"last_run,omitempty"`
	Usage       map[string]float64 `json:"usage"`
	UsageTotal  map[string]float64 `json:"usage_total"`
	Version     int64              `json:"version"`
	CreatedBy   string             `json:"created_by"`
	CreatedAt   time.Time          `json:"created_at"`
	UpdatedAt   time.Time          `json:"updated_at"`
}

func (n *Node) order() []byte { return orderBytes(n.Priority, n.CreatedAt.UnixNano()) }

// Clone returns a deep enough copy to mutate without touching n.
func (n *Node) Clone() *Node {
	c := *n
	c.Labels = append([]string(nil), n.Labels...)
	if n.Props != nil {
		c.Props = make(map[string]any, len(n.Props))
		for k, v := range n.Props {
			c.Props[k] = v
		}
	}
	if n.Lease != nil {
		l := *n.Lease
		c.Lease = &l
	}
	c.Usage = cloneUsage(n.Usage)
	c.UsageTotal = cloneUsage(n.UsageTotal)
	return &c
}

func cloneUsage(u map[string]float64) map[string]float64 {
	c := make(map[string]float64, len(u))
	for k, v := range u {
		c[k] = v
	}
	return c
}

var (
	clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	typePattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)
	queuePattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
)

// ValidID reports whether id is a well-formed node id: a client id, or a
// system id such as identity:<sub>, which may carry any printable character
// except '/' (ids appear in URL paths).
func ValidID(id string) bool {
	if clientIDPattern.MatchString(id) {
		return true
	}
	return IsIdentityID(id) && validSubject(id[len(IdentityPrefix):])
}

// ValidClientID reports whether id may be chosen by a client.
func ValidClientID(id string) bool {
	return clientIDPattern.MatchString(id) && !IsIdentityID(id)
}

// ValidType reports whether t is a well-formed node type.
func ValidType(t string) bool { return typePattern.MatchString(t) }

// ValidQueue reports whether q is a well-formed queue name.
func ValidQueue(q string) bool { return queuePattern.MatchString(q) }

func validSubject(sub string) bool {
	if sub == "" || len(sub) > 200 {
		return false
	}
	for _, r := range sub {
		if r < 0x21 || r == 0x7f || r == '/' || r == '?' || r == '#' || r == '%' {
			return false
		}
	}
	return true
}

// ValidSubject reports whether sub may name an identity.
func ValidSubject(sub string) bool { return validSubject(sub) }

// NodeGet returns the node or a fault.NotFound.
func (tx *Tx) NodeGet(tenant, id string) (*Node, error) {
	var n Node
	ok, err := tx.getJSON(nodeKey(tenant, id), &n)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &fault.NotFound{What: "node", ID: id}
	}
	return &n, nil
}

// NodeExists reports whether the node exists.
func (tx *Tx) NodeExists(tenant, id string) (bool, error) {
	return tx.exists(nodeKey(tenant, id))
}

// NodeInsert stores a new node, its indexes and a created event. The caller
// has filled every field; Version is set to 1. A taken id is a
// fault.AlreadyExists.
func (tx *Tx) NodeInsert(n *Node, by string) error {
	exists, err := tx.exists(nodeKey(n.Tenant, n.ID))
	if err != nil {
		return err
	}
	if exists {
		return &fault.AlreadyExists{What: "node", ID: n.ID}
	}
	// A node re-created under a deleted node's id continues its fence numbers,
	// so a holder of the old node can never present a fence the new one issues.
	if b, ok, err := tx.get(fenceKey(n.Tenant, n.ID)); err != nil {
		return err
	} else if ok && len(b) == 8 {
		n.LastFence = uint64FromBytes(b)
	}
	n.Version = 1
	n.CreatedAt, n.UpdatedAt = tx.now.UTC(), tx.now.UTC()
	if err := tx.setJSON(nodeKey(n.Tenant, n.ID), n); err != nil {
		return err
	}
	if err := tx.writeIndexes(nil, n); err != nil {
		return err
	}
	return tx.Emit(n.Tenant, EventCreated, n.ID, by, map[string]any{"type": n.Type, "status": n.Status})
}

// NodePut stores a changed node: bumps Version and UpdatedAt and rewrites the
// indexes that changed. old must be the stored record n was derived from.
// It emits no event: the caller emits the one that names the change.
func (tx *Tx) NodePut(old, n *Node) error {
	n.Version = old.Version + 1
	n.UpdatedAt = tx.now.UTC()
	if err := tx.setJSON(nodeKey(n.Tenant, n.ID), n); err != nil {
		return err
	}
	if err := tx.writeIndexes(old, n); err != nil {
		return err
	}
	return tx.propagateStatus(old, n)
}

// NodePutQuiet stores a node whose change is lease bookkeeping only (a
// renewal): no version bump, no index change.
func (tx *Tx) NodePutQuiet(n *Node) error {
	return tx.setJSON(nodeKey(n.Tenant, n.ID), n)
}

// NodeDelete removes the node and its index entries and keeps its last fence.
// Edges are the caller's to retire.
func (tx *Tx) NodeDelete(n *Node, by string) error {
	if err := tx.del(nodeKey(n.Tenant, n.ID)); err != nil {
		return err
	}
	if err := tx.set(fenceKey(n.Tenant, n.ID), putU64(n.LastFence)); err != nil {
		return err
	}
	if err := tx.del(blockersKey(n.Tenant, n.ID)); err != nil {
		return err
	}
	if err := tx.del(dependentsKey(n.Tenant, n.ID)); err != nil {
		return err
	}
	if err := tx.writeIndexes(n, nil); err != nil {
		return err
	}
	return tx.Emit(n.Tenant, EventDeleted, n.ID, by, map[string]any{"status": n.Status})
}

// indexKeys lists every index key of n.
func indexKeys(n *Node) [][]byte {
	ord := n.order()
	keys := [][]byte{
		orderKey(n.Tenant, ord, n.ID),
		statusKey(n.Tenant, string(n.Status), ord, n.ID),
	}
	if n.Queue != "" {
		keys = append(keys, queueKey(n.Tenant, n.Queue, string(n.Status), ord, n.ID))
	}
	if n.Parent != "" {
		keys = append(keys, parentKey(n.Tenant, n.Parent, ord, n.ID))
	}
	if n.Lease != nil {
		keys = append(keys, liveLeaseKey(n.Tenant, n.ID))
	}
	return keys
}

// writeIndexes moves n's index entries from their old place to the new; nil
// stands for "no node".
func (tx *Tx) writeIndexes(old, n *Node) error {
	var oldKeys, newKeys [][]byte
	if old != nil {
		oldKeys = indexKeys(old)
	}
	if n != nil {
		newKeys = indexKeys(n)
	}
	keep := make(map[string]bool, len(newKeys))
	for _, k := range newKeys {
		keep[string(k)] = true
	}
	for _, k := range oldKeys {
		if keep[string(k)] {
			delete(keep, string(k))
			continue
		}
		if err := tx.del(k); err != nil {
			return err
		}
	}
	for _, k := range newKeys {
		if !keep[string(k)] {
			continue
		}
		if err := tx.set(k, nil); err != nil {
			return err
		}
	}
	tx.countQueue(old, n)
	return tx.syncReady(old, n)
}

// countQueue keeps the in-memory per-queue status counts in step.
func (tx *Tx) countQueue(old, n *Node) {
	var oq, nq string
	var os, ns Status
	if old != nil && old.Queue != "" {
		oq, os = old.Queue, old.Status
	}
	if n != nil && n.Queue != "" {
		nq, ns = n.Queue, n.Status
	}
	if oq == nq && os == ns {
		return
	}
	tenant := ""
	if old != nil {
		tenant = old.Tenant
	} else {
		tenant = n.Tenant
	}
	m := tx.store.ready
	tx.OnCommit(func() {
		if oq != "" {
			m.count(tenant, oq, os, "")
		}
		if nq != "" {
			m.count(tenant, nq, "", ns)
		}
	})
}

func uint64FromBytes(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
