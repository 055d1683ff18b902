package mcp

import (
	"fmt"
	"time"

	"github.com/tether-run/tether/client"
)

// The tools answer compactly: what an agent needs for its next step (ids,
// title, body, the lease's fence and expiry) and a next hint naming the
// tool to call next, never the API's whole document (a claim's answer
// carried the lease twice, ~1.5 KB). Each answer type is the tool's output
// schema (see outputSchema); get_node reads the rest of a node.

// nodeOut is a node as an agent works on it.
type nodeOut struct {
	ID          string         `json:"id" jsonschema:"the node's id: pass it as node_id"`
	Type        string         `json:"type" jsonschema:"the kind of work"`
	Title       string         `json:"title,omitempty" jsonschema:"a one-line summary"`
	Status      string         `json:"status" jsonschema:"open, queued, running, done, failed, dead, cancelled or expired"`
	Queue       string         `json:"queue,omitempty" jsonschema:"the queue the node is in"`
	Parent      string         `json:"parent,omitempty" jsonschema:"the node this one is a child of"`
	Body        string         `json:"body,omitempty" jsonschema:"the instructions or input of the work"`
	Props       map[string]any `json:"props,omitempty" jsonschema:"the node's free-form properties"`
	Labels      []string       `json:"labels,omitempty" jsonschema:"the node's labels"`
	Attempts    int64          `json:"attempts" jsonschema:"runs started so far"`
	MaxAttempts int64          `json:"max_attempts" jsonschema:"runs allowed before the node is dead"`
	Holder      string         `json:"holder,omitempty" jsonschema:"who holds its live lease"`
	Error       string         `json:"error,omitempty" jsonschema:"the last run's error"`
	Result      any            `json:"result,omitempty" jsonschema:"the result it was completed with"`
	BlockedBy   []string       `json:"blocked_by,omitempty" jsonschema:"the nodes it waits for"`
}

// nodeRow is a node in a list: nodeOut without body, props and result.
type nodeRow struct {
	ID          string    `json:"id" jsonschema:"the node's id"`
	Type        string    `json:"type" jsonschema:"the kind of work"`
	Title       string    `json:"title,omitempty" jsonschema:"a one-line summary"`
	Status      string    `json:"status" jsonschema:"open, queued, running, done, failed, dead, cancelled or expired"`
	Queue       string    `json:"queue,omitempty" jsonschema:"the queue the node is in"`
	Attempts    int64     `json:"attempts" jsonschema:"runs started so far"`
	MaxAttempts int64     `json:"max_attempts" jsonschema:"runs allowed before the node is dead"`
	Holder      string    `json:"holder,omitempty" jsonschema:"who holds its live lease"`
	Error       string    `json:"error,omitempty" jsonschema:"the last run's error"`
	UpdatedAt   time.Time `json:"updated_at" jsonschema:"when it last changed"`
}

// leaseOut is a lease as its holder needs it.
type leaseOut struct {
	Fence     int64     `json:"fence" jsonschema:"the lease's fencing number: calls on the node pass it (this session fills it in)"`
	Session   string    `json:"session,omitempty" jsonschema:"the session the lease was claimed under"`
	Holder    string    `json:"holder" jsonschema:"who holds it"`
	ExpiresAt time.Time `json:"expires_at" jsonschema:"when it lapses unless renewed"`
	TTLMS     int64     `json:"ttl_ms" jsonschema:"how long each renewal lasts, in milliseconds"`
	Kept      bool      `json:"kept" jsonschema:"true while this MCP session renews it for you"`
}

type claimOut struct {
	Claimed   bool          `json:"claimed" jsonschema:"true when a node was claimed; false when none was ready"`
	Node      *nodeOut      `json:"node,omitempty" jsonschema:"the node claimed"`
	Lease     *leaseOut     `json:"lease,omitempty" jsonschema:"your lease on it"`
	Throttled *throttledOut `json:"throttled,omitempty" jsonschema:"why nothing was handed out when flow control held the queue's nodes back (absent when the queue had nothing ready)"`
	Next      string        `json:"next" jsonschema:"what to call next"`
}

// throttledOut is the flow control that emptied a claim.
type throttledOut struct {
	Key          string `json:"key" jsonschema:"the concurrency key (or queue) whose limit, start rate or budget held the claim back"`
	Reason       string `json:"reason" jsonschema:"concurrency_limited (its running limit is reached), start_rate_limited (its start rate is spent) or budget_exhausted (its usage budget for the window is spent)"`
	RetryAfterMS int64  `json:"retry_after_ms" jsonschema:"milliseconds until a claim may succeed: call claim_next again after this long (0: unknown, try again soon)"`
}

// emptyClaim is claim_next's answer when nothing was handed out: th says
// why when flow control held the queue's nodes back.
func emptyClaim(th *client.Throttle) *claimOut {
	if th == nil {
		return &claimOut{Claimed: false, Next: nextEmptyQueue}
	}
	ms := th.RetryAfter.Milliseconds()
	return &claimOut{
		Claimed:   false,
		Throttled: &throttledOut{Key: th.Key, Reason: string(th.Reason), RetryAfterMS: ms},
		Next: fmt.Sprintf("Nodes are ready but %s holds them back (%s): call claim_next again in %d ms, or list_limits to see the limits and budgets.",
			th.Key, th.Reason, ms),
	}
}

type leaseAnswer struct {
	NodeID      string   `json:"node_id" jsonschema:"the node"`
	Status      string   `json:"status" jsonschema:"the node's status"`
	Lease       leaseOut `json:"lease" jsonschema:"your lease, renewed"`
	InboxUnread int64    `json:"inbox_unread" jsonschema:"unread messages for you or the node: read them with inbox"`
	Next        string   `json:"next" jsonschema:"what to call next"`
}

type completeOut struct {
	NodeID      string    `json:"node_id" jsonschema:"the node"`
	Status      string    `json:"status" jsonschema:"the node's status: done"`
	AlreadyDone bool      `json:"already_done" jsonschema:"true when the node was done before this call, which then changed nothing"`
	Claimed     *claimOut `json:"claimed,omitempty" jsonschema:"the next node claimed in the same call (when you passed next)"`
	Next        string    `json:"next" jsonschema:"what to call next"`
}

type endOut struct {
	NodeID      string `json:"node_id" jsonschema:"the node"`
	Status      string `json:"status" jsonschema:"the node's status now: queued (to be retried or claimed again), failed, dead, ..."`
	Attempts    int64  `json:"attempts,omitempty" jsonschema:"runs started so far"`
	MaxAttempts int64  `json:"max_attempts,omitempty" jsonschema:"runs allowed before the node is dead"`
	Next        string `json:"next" jsonschema:"what to call next"`
}

type commentOut struct {
	ID     string `json:"id" jsonschema:"the comment's id"`
	NodeID string `json:"node_id" jsonschema:"the node commented on"`
	Next   string `json:"next" jsonschema:"what to call next"`
}

type nodeAnswer struct {
	Node  nodeOut   `json:"node" jsonschema:"the node"`
	Lease *leaseOut `json:"lease,omitempty" jsonschema:"its live lease, if anyone holds it"`
	// DuplicateOf is set when a create made nothing: its unique key named
	// this node.
	DuplicateOf string `json:"duplicate_of,omitempty" jsonschema:"set when the create made nothing because its unique key names this existing node"`
	Next        string `json:"next" jsonschema:"what to call next"`
}

type eventOut struct {
	Seq  int64          `json:"seq" jsonschema:"the event's sequence number"`
	Type string         `json:"type" jsonschema:"what happened"`
	At   time.Time      `json:"at" jsonschema:"when"`
	By   string         `json:"by" jsonschema:"who did it"`
	Data map[string]any `json:"data,omitempty" jsonschema:"the event's details"`
}

type historyOut struct {
	Events     []eventOut `json:"events" jsonschema:"the events, oldest first"`
	NextCursor string     `json:"next_cursor,omitempty" jsonschema:"pass as after for the next page; absent on an empty page"`
	Next       string     `json:"next" jsonschema:"what to call next"`
}

type messageOut struct {
	ID       string    `json:"id" jsonschema:"the message's id"`
	From     string    `json:"from" jsonschema:"who sent it"`
	To       string    `json:"to" jsonschema:"whom it was sent to"`
	Body     string    `json:"body" jsonschema:"the message"`
	NodeID   string    `json:"node_id,omitempty" jsonschema:"the node it was sent to"`
	Thread   string    `json:"thread,omitempty" jsonschema:"its thread"`
	Priority int64     `json:"priority" jsonschema:"higher is more urgent"`
	SentAt   time.Time `json:"sent_at" jsonschema:"when it was sent"`
	Read     bool      `json:"read" jsonschema:"whether it was read"`
}

type inboxOut struct {
	Messages   []messageOut `json:"messages" jsonschema:"the messages, most urgent first"`
	NextCursor string       `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next page"`
	Next       string       `json:"next" jsonschema:"what to call next"`
}

type sentOut struct {
	ID   string `json:"id" jsonschema:"the message's id"`
	To   string `json:"to" jsonschema:"whom it was sent to"`
	Next string `json:"next" jsonschema:"what to call next"`
}

type listNodesOut struct {
	Nodes      []nodeRow `json:"nodes" jsonschema:"the nodes, by priority then age"`
	NextCursor string    `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next page; absent on the last page"`
	Next       string    `json:"next" jsonschema:"what to call next"`
}

type queueOut struct {
	Queue         string           `json:"queue" jsonschema:"the queue's name"`
	Counts        map[string]int64 `json:"counts" jsonschema:"nodes by status"`
	Ready         int              `json:"ready" jsonschema:"nodes claimable now"`
	Paused        bool             `json:"paused" jsonschema:"true while claims are paused"`
	MaxRunning    int64            `json:"max_running,omitempty" jsonschema:"the cap on live leases (0: none)"`
	OldestReadyAt *time.Time       `json:"oldest_ready_at,omitempty" jsonschema:"when the oldest ready node was created"`
}

type queuesOut struct {
	Queues     []queueOut `json:"queues" jsonschema:"the queues of this page, by name"`
	NextCursor string     `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next page; absent on the last page"`
	Next       string     `json:"next" jsonschema:"what to call next"`
}

type waitOut struct {
	Ended    bool             `json:"ended" jsonschema:"true when every node waited for has ended (done, failed, dead or cancelled)"`
	TimedOut bool             `json:"timed_out" jsonschema:"true when max_wait_ms passed first"`
	Counts   map[string]int64 `json:"counts" jsonschema:"the nodes waited for, by status"`
	Nodes    []nodeRow        `json:"nodes" jsonschema:"the nodes waited for, with their statuses"`
	Next     string           `json:"next" jsonschema:"what to call next"`
}

func briefNode(n client.Node) nodeOut {
	out := nodeOut{
		ID: n.ID, Type: n.Type, Title: n.Title, Status: string(n.Status), Body: n.Body,
		Props: n.Props, Labels: n.Labels, Attempts: n.Attempts, MaxAttempts: n.MaxAttempts,
		Result: n.Result, BlockedBy: n.BlockedBy,
		Queue: deref(n.Queue), Parent: deref(n.Parent), Error: deref(n.Error),
	}
	if n.Lease != nil {
		out.Holder = n.Lease.By
	}
	return out
}

func briefRow(n client.Node) nodeRow {
	out := nodeRow{
		ID: n.ID, Type: n.Type, Title: n.Title, Status: string(n.Status), Queue: deref(n.Queue),
		Attempts: n.Attempts, MaxAttempts: n.MaxAttempts, Error: deref(n.Error), UpdatedAt: n.UpdatedAt,
	}
	if n.Lease != nil {
		out.Holder = n.Lease.By
	}
	return out
}

func briefLease(l client.Lease, kept bool) leaseOut {
	return leaseOut{Fence: l.Fence, Session: deref(l.Session), Holder: l.By, ExpiresAt: l.ExpiresAt, TTLMS: l.TTLMS, Kept: kept}
}

func briefClaim(c client.ClaimResponse) *claimOut {
	n, l := briefNode(c.Node), briefLease(c.Lease, true)
	return &claimOut{Claimed: true, Node: &n, Lease: &l, Next: nextAfterClaim}
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// The next hints, in one place so that they name the tools consistently.
const (
	nextAfterClaim = "Do the work the node's title and body describe. Call progress now and then to report; " +
		"end with complete (result) or fail (error). The lease is renewed for you until then."
	nextEmptyQueue = "Nothing was ready: call claim_next again (wait_ms up to 60000 waits for work), or list_queues to find other work."
	nextAfterRenew = "Keep working; end with complete, fail or release."
	nextAfterEnd   = "Call claim_next for more work."
	nextAlreadyEnd = "The node was done before this call, which changed nothing: do not redo it. Call claim_next for more work."
	nextAfterNote  = "Carry on; get_node or history show the node's state."
	nextAfterMade  = "The node waits in its queue for a worker: call wait_for to block until it ends, or get_node to look at it."
	nextAfterOpen  = "The node has no queue, so no worker claims it: give it children (create_node with parent set to its id and a queue), " +
		"then call wait_for with children: true."
	nextAfterRead  = "Call claim_next to work on a queued node, history for its events, or wait_for to block until it ends."
	nextHistory    = "Call history again with after set to next_cursor for later events."
	nextInbox      = "Act on the messages; reply with send_message."
	nextAfterSend  = "The recipient reads it with inbox; replies arrive in your inbox."
	nextNodesMore  = "Call list_nodes again with cursor set to next_cursor for the next page, or get_node for one node."
	nextNodesLast  = "This is the last page: call get_node for one node's details."
	nextQueues     = "Call claim_next on a queue with ready nodes, or list_nodes with queue to see its nodes."
	nextQueuesMore = "Call list_queues again with cursor set to next_cursor for more queues, claim_next on a queue with ready nodes, or list_nodes with queue to see its nodes."
	nextWaitEnded  = "Every node waited for has ended: read results with get_node, or retry failures."
	nextWaitAgain  = "Not all have ended yet: call wait_for again to keep waiting."
)
