package schedule

// Schedule and run records are stored in MessagePack by a codec generated
// by github.com/tinylib/msgp (records_gen.go; `go generate
// ./internal/schedule/`), as maps keyed by the JSON names
// (internal/records/foreign.go): a field may be added, and any
// other change bumps records.FormatVersion. The JSON tags are the stored
// names. The node template and chain are nodes.NodeSpec, stored by its own
// codec (internal/nodes/spec_gen.go), so a field added to a create body is
// kept by a schedule without a change here; records_test.go holds the bytes.

import (
	"time"

	"github.com/tether-run/tether/internal/nodes"
)

//go:generate go tool msgp -file records.go -o records_gen.go -tests=false -io=false -unexported
//msgp:tag json
//msgp:timezone utc
//msgp:replace Overlap with:string
//msgp:replace Catchup with:string
//msgp:replace Trigger with:string
//msgp:replace SkipReason with:string

// Record is a schedule as stored (records.Txn.SchedulePut): its settings, and the
// firing state the loop keeps in step with each fire.
type Record struct {
	ID              string           `json:"id"`
	Cron            string           `json:"cron,omitempty"`
	At              *time.Time       `json:"at,omitempty"`
	Timezone        string           `json:"timezone"`
	Template        nodes.NodeSpec   `json:"template"`
	Chain           []nodes.NodeSpec `json:"chain,omitempty"`
	Overlap         Overlap          `json:"overlap"`
	Catchup         Catchup          `json:"catchup"`
	CatchupWindowMS int64            `json:"catchup_window_ms"`
	JitterMS        int64            `json:"jitter_ms"`
	BackoffMS       []int64          `json:"backoff_ms"`
	Enabled         bool             `json:"enabled"`
	// Note is the reason given with the last pause or resume.
	Note      string     `json:"note,omitempty"`
	PausedAt  *time.Time `json:"paused_at,omitempty"`
	PausedBy  string     `json:"paused_by,omitempty"`
	Version   int64      `json:"version"`
	CreatedBy string     `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`

	// NextFireAt is the nominal instant of the first fire not yet
	// processed; nil when there is none (a one-shot that was skipped).
	NextFireAt *time.Time `json:"next_fire_at,omitempty"`
	// LastSeq is the seq of the newest run record.
	LastSeq uint64 `json:"last_seq"`
	// Last is the newest run that made nodes: the one overlap looks at.
	Last *RunRef `json:"last,omitempty"`
	// Pending are the runs whose outcome the failure count has not taken
	// in yet, oldest first.
	Pending []RunRef `json:"pending,omitempty"`
	// Failures is how many runs failed in a row; LastFailureAt is when the
	// last of them ended.
	Failures      int64      `json:"failures"`
	LastFailureAt *time.Time `json:"last_failure_at,omitempty"`
}

// RunRef names a run's nodes in a schedule record.
type RunRef struct {
	Seq   uint64   `json:"seq"`
	Nodes []string `json:"nodes"`
	// After are the nodes of an earlier run this one waits for (queue,
	// buffer_one).
	After []string `json:"after,omitempty"`
}

// Run is one fire as stored (records.Txn.ScheduleRunPut): the nodes it made, or
// why it made none. A skipped record may stand for several fires in a row
// with the same reason (Count, from ScheduledAt to LastScheduledAt).
type Run struct {
	Seq         uint64     `json:"seq"`
	Trigger     Trigger    `json:"trigger"`
	ScheduledAt time.Time  `json:"scheduled_at"`
	FiredAt     time.Time  `json:"fired_at"`
	By          string     `json:"by,omitempty"`
	Nodes       []string   `json:"nodes,omitempty"`
	After       []string   `json:"after,omitempty"`
	Cancelled   []string   `json:"cancelled,omitempty"`
	Coalesced   int64      `json:"coalesced,omitempty"`
	Skipped     SkipReason `json:"skipped,omitempty"`
	Count       int64      `json:"count,omitempty"`
	// LastScheduledAt is the nominal instant of the last fire a skipped
	// record stands for.
	LastScheduledAt *time.Time `json:"last_scheduled_at,omitempty"`
}
