package graph

import (
	"encoding/json"
	"time"
)

// Status is a node's place in its lifecycle.
//
//	open/queued ──claim──▶ running ──complete──▶ done
//	     ▲                   │ ──fail (no retry)──▶ failed
//	     └─release, expiry,──┘ ──out of attempts──▶ dead
//	       fail with retry        cancel (any time) ▶ cancelled
//	open/queued ──start_by passed, never claimed──▶ expired
type Status string

// The statuses of a node.
const (
	StatusOpen      Status = "open"      // no queue, at rest: claimable by id
	StatusQueued    Status = "queued"    // waiting in its queue
	StatusRunning   Status = "running"   // a worker holds a live lease
	StatusDone      Status = "done"      // completed
	StatusFailed    Status = "failed"    // failed without retry
	StatusDead      Status = "dead"      // out of attempts
	StatusCancelled Status = "cancelled" // cancelled
	StatusExpired   Status = "expired"   // not claimed by its start_by
)

// Statuses lists every status.
func Statuses() []Status {
	return []Status{StatusOpen, StatusQueued, StatusRunning, StatusDone, StatusFailed, StatusDead, StatusCancelled, StatusExpired}
}

// Terminal reports whether a node in status s never runs again (unless
// requeued by hand).
func (s Status) Terminal() bool {
	return s == StatusDone || s == StatusFailed || s == StatusDead || s == StatusCancelled || s == StatusExpired
}

// Outcome is how a run ended: the outcome of its retired assigned edge.
type Outcome string

// The outcomes of a run.
const (
	OutcomeDone      Outcome = "done"      // completed
	OutcomeFailed    Outcome = "failed"    // failed (retried or not)
	OutcomeReleased  Outcome = "released"  // given back by its holder
	OutcomeExpired   Outcome = "expired"   // its lease ran out
	OutcomeCancelled Outcome = "cancelled" // the node was cancelled or deleted
)

// Edge types the store gives meaning to.
const (
	EdgeDependsOn = "depends_on" // From waits for To
	EdgeParentOf  = "parent_of"  // From is the parent of To
	EdgeAssigned  = "assigned"   // From was carried by To (identity:<worker>); written by claims only
)

// Node is a work item.
type Node struct {
	Tenant      string
	ID          string
	Type        string
	Title       string
	Body        string
	Status      Status
	Queue       string
	Priority    int64
	Target      string // when set, only this worker may claim the node
	Labels      []string
	Props       map[string]any
	Attempts    int64
	MaxAttempts int64
	RunAt       *time.Time
	Parent      string
	// Lease is the live lease while the node runs; nil otherwise.
	Lease *Lease
	// LastFence is the fence of the node's latest claim (0: never claimed).
	LastFence uint64
	Result    json.RawMessage
	Error     string
	Version   int64
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Lease is the live claim on a node, as stored.
type Lease struct {
	Holder    string // the worker's identity
	Session   string
	Fence     uint64
	TTL       time.Duration
	ClaimedAt time.Time
	RenewedAt time.Time
	ExpiresAt time.Time
}

// NodeSpec describes a node to create (lease.Store.Create). Zero fields take
// their defaults.
type NodeSpec struct {
	ID       string // "": a fresh UUIDv7
	Type     string // required
	Title    string
	Body     string
	Queue    string // "": an open node, claimed by id only
	Priority int64  // higher first within a queue
	Target   string // only this worker may claim it
	Labels   []string
	Props    map[string]any
	// MaxAttempts is how many runs it gets (0: the tenant's default).
	MaxAttempts int64
	// RunAt delays its first run until then; Delay until now + Delay.
	RunAt *time.Time
	Delay time.Duration
	// Timeout ends a run that lasts longer, renewed or not (0: none).
	Timeout time.Duration
	// Parent makes it a child of that node; DependsOn lists the nodes that
	// must be done before it may run.
	Parent    string
	DependsOn []string
	// CreatedBy names its creator (lease.Options.Identity when empty).
	CreatedBy string
}

// Edge is a typed link between two nodes of one tenant.
type Edge struct {
	From, Type, To string
	Props          map[string]any
	CreatedBy      string
	CreatedAt      time.Time
	// RetiredAt is set once the edge is history.
	RetiredAt *time.Time
}

// Assignment is one run of a node by a worker: an assigned edge, live or
// retired.
type Assignment struct {
	NodeID  string
	Worker  string
	Session string
	Fence   uint64
	// Outcome is empty while the run is live.
	Outcome   Outcome
	ClaimedAt time.Time
	// EndedAt is set once the run ended.
	EndedAt *time.Time
}

// Live reports whether the run still holds its lease.
func (a Assignment) Live() bool { return a.Outcome == "" }

// Dir is the direction of an edge walk relative to a node.
type Dir string

// The directions of an edge walk.
const (
	DirBoth Dir = ""
	DirOut  Dir = "out"
	DirIn   Dir = "in"
)

// EdgeQuery selects the edges of one node. Zero fields do not filter.
type EdgeQuery struct {
	Type           string
	Dir            Dir
	IncludeRetired bool
}

// NodeQuery selects a page of a tenant's nodes, in list order (priority
// high first, then oldest, then id). Zero fields do not filter.
type NodeQuery struct {
	Status Status
	Queue  string
	Type   string
	Label  string
	Holder string // nodes whose live lease this worker holds
	Parent string
	// Limit is the page size (0: 100); Cursor continues a previous page.
	Limit  int
	Cursor string
}
