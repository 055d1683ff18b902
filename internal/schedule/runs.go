package schedule

import (
	"encoding/json"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// RunStatus is where a run stands, read from its nodes.
type RunStatus string

// The run statuses. open, queued and running are live; the rest are over.
const (
	RunOpen      RunStatus = "open"
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunDone      RunStatus = "done"
	RunFailed    RunStatus = "failed"
	RunDead      RunStatus = "dead"
	RunCancelled RunStatus = "cancelled"
	// RunDeleted is a run whose nodes were all deleted.
	RunDeleted RunStatus = "deleted"
	// RunSkipped is a fire that made no run.
	RunSkipped RunStatus = "skipped"
)

// RunStatuses lists every run status.
func RunStatuses() []RunStatus {
	return []RunStatus{RunOpen, RunQueued, RunRunning, RunDone, RunFailed, RunDead, RunCancelled, RunDeleted, RunSkipped}
}

// runState is what a run's nodes say about it.
type runState struct {
	status   RunStatus
	over     bool      // no node of it can run any more
	endedAt  time.Time // when the last of its nodes ended (over runs)
	attempts int64
	err      *string
	result   json.RawMessage
	live     []string // its nodes that are not terminal
	// stranded are live chain steps after a step that ended failed, dead or
	// cancelled: their depends_on (on_fail: cancel) holds them back for good
	// unless that step is requeued.
	stranded []string
}

// stateOf reads the nodes of a run, in chain order. The run's head is its
// first node (that still exists) not done: none, and the run is done; a
// terminal head (failed, dead or cancelled) ends the run with its status,
// and the steps after it are stranded; a live head gives the run its
// status (running when any node runs). A run whose nodes were all deleted
// is deleted.
func stateOf(tx *graphstore.Tx, tenant string, nodes []string) (runState, error) {
	var st runState
	var head *records.Node
	running, present := false, 0
	for _, id := range nodes {
		n, err := tx.NodeGet(tenant, id)
		if _, gone := err.(*fault.NotFound); gone {
			continue
		}
		if err != nil {
			return runState{}, err
		}
		present++
		st.attempts += n.Attempts
		switch {
		case !n.Status.Terminal():
			st.live = append(st.live, id)
			running = running || n.Status == records.StatusRunning
			if head != nil && head.Status.Terminal() {
				st.stranded = append(st.stranded, id)
			}
		case n.UpdatedAt.After(st.endedAt):
			st.endedAt = n.UpdatedAt
		}
		if n.Status == records.StatusDone && len(n.Result) > 0 {
			st.result = n.Result
		}
		if head == nil && n.Status != records.StatusDone {
			head = n
		}
	}
	switch {
	case present == 0:
		st.status, st.over = RunDeleted, true
	case head == nil:
		st.status, st.over = RunDone, true
	case head.Status.Terminal():
		st.status, st.over, st.err = RunStatus(head.Status), true, head.Error
	case running:
		st.status = RunRunning
	default:
		st.status = RunStatus(head.Status)
	}
	if !st.over {
		st.endedAt = time.Time{}
	}
	if st.status != RunDone {
		st.result = nil
	}
	return st, nil
}

// failed reports whether a run that is over counts as a failure for the
// backoff: failed or dead. A cancelled or deleted run counts neither way.
func (st runState) failed() bool { return st.status == RunFailed || st.status == RunDead }

// RunView is a run record with what its nodes say now.
type RunView struct {
	Run
	ScheduleID string
	Status     RunStatus
	Attempts   int64
	EndedAt    *time.Time
	// Duration is from the fire to the end of the run's last node (its
	// time in the queue included); nil while the run is not over.
	Duration *time.Duration
	Error    *string
	Result   json.RawMessage
}

func viewRun(tx *graphstore.Tx, tenant, id string, r Run) (RunView, error) {
	v := RunView{Run: r, ScheduleID: id}
	if r.Skipped != "" {
		v.Status = RunSkipped
		return v, nil
	}
	st, err := stateOf(tx, tenant, r.Nodes)
	if err != nil {
		return RunView{}, err
	}
	v.Status, v.Attempts, v.Error, v.Result = st.status, st.attempts, st.err, st.result
	if st.over && !st.endedAt.IsZero() {
		end := st.endedAt
		d := max(end.Sub(r.FiredAt), 0)
		v.EndedAt, v.Duration = &end, &d
	}
	return v, nil
}
