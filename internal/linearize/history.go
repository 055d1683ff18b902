package linearize

import (
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Op is one recorded call: what was sent, what came back, and when, in Unix
// nanoseconds of the machine's clock (shared by every process on it, so
// another process's calls can be added).
type Op struct {
	Input  Input  `json:"input"`
	Output Output `json:"output"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	// Epoch is the server incarnation the call was sent to; an unknown
	// outcome cannot have taken effect after that server died.
	Epoch int `json:"epoch"`
}

// Recorder collects a history from concurrent clients. Safe for concurrent
// use.
type Recorder struct {
	mu       sync.Mutex
	ops      []Op
	died     []int64 // died[e]: when server e was known dead
	restarts []Op
}

// NewRecorder is an empty history whose first server is epoch 0.
func NewRecorder() *Recorder { return &Recorder{} }

// Now is the recorder's clock.
func Now() int64 { return time.Now().UnixNano() }

// Pending is a call that has been sent and not yet answered.
type Pending struct {
	r *Recorder
	i int
}

// Begin records that in is about to be sent to the server of epoch.
func (r *Recorder) Begin(in Input, epoch int) *Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, Op{Input: in, Call: Now(), Epoch: epoch})
	return &Pending{r: r, i: len(r.ops) - 1}
}

// End records the answer.
func (p *Pending) End(out Output) {
	at := Now()
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	p.r.ops[p.i].Output, p.r.ops[p.i].Return = out, at
}

// Lost records that no answer came: the outcome is unknown.
func (p *Pending) Lost() { p.End(Output{Result: Unknown}) }

// Add records a call made elsewhere (another process), already answered.
func (r *Recorder) Add(op Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

// Died records that the server of the current epoch is gone (its process
// reaped after a kill -9); the next epoch begins. Call it before the restart.
func (r *Recorder) Died() {
	at := Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.died = append(r.died, at)
}

// Restarted records that a new server started between call and ret, after
// every call to the dead one had ended.
func (r *Recorder) Restarted(call, ret int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.restarts = append(r.restarts, Op{Input: Input{Kind: Restart}, Output: Output{Result: OK}, Call: call, Return: ret})
}

// Ops is a copy of the calls recorded so far.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// Counts are what a history holds.
type Counts struct {
	Ops      int // client calls checked
	Unknown  int // of which the outcome is unknown
	Dropped  int // unknown calls that cannot have had an effect (reads; sent to a dead server)
	Restarts int
	Nodes    int
}

// History is the history to check. A call without an answer may have taken
// effect up to the moment its server was known dead (or up to now, if its
// server still runs), so that is its return; one sent after its server died,
// or a read, constrains nothing and is left out. Every restart appears once
// per node. Each Input carries its call's interval.
func (r *Recorder) History() ([]Op, Counts) {
	end := Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var c Counts
	nodes := map[string]bool{}
	var out []Op
	for _, op := range r.ops {
		if op.Output.Result == Unknown || op.Output.Result == 0 { // 0: never answered
			op.Output = Output{Result: Unknown}
			c.Unknown++
			op.Return = end
			if op.Epoch < len(r.died) {
				op.Return = r.died[op.Epoch]
			}
			if op.Input.Kind == Read || op.Return < op.Call {
				c.Dropped++
				continue
			}
		}
		c.Ops++
		nodes[op.Input.Node] = true
		out = append(out, stamped(op))
	}
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, rs := range r.restarts {
		c.Restarts++
		for _, n := range names {
			rs.Input.Node = n
			out = append(out, stamped(rs))
		}
	}
	c.Nodes = len(names)
	return out, c
}

func stamped(op Op) Op {
	op.Input.Call, op.Input.Return = op.Call, op.Return
	return op
}

// Operations is a history in porcupine's terms (a ClientId per identity, for
// its drawing).
func Operations(history []Op) []porcupine.Operation {
	clients := map[string]int{"": 0}
	out := make([]porcupine.Operation, len(history))
	for i, op := range history {
		id, ok := clients[op.Input.Client]
		if !ok {
			id = len(clients)
			clients[op.Input.Client] = id
		}
		out[i] = porcupine.Operation{ClientId: id, Input: op.Input, Call: op.Call, Output: op.Output, Return: op.Return}
	}
	return out
}
