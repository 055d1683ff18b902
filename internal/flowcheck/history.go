package flowcheck

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// Kind names what a recorded call did to a lease.
type Kind uint8

// The calls the checker reads. Grant is any call whose answer handed out a
// lease (claim by id, claim-next, a claims batch, complete with next, a
// status change to in_progress), or showed its holder's own lease renewed
// by a re-claim (Renewed set); Renew is a renewal the server answered; End
// is a release, complete or fail sent by the lease's holder, whatever its
// answer.
const (
	Grant Kind = iota + 1
	Renew
	End
)

func (k Kind) String() string {
	switch k {
	case Grant:
		return "grant"
	case Renew:
		return "renew"
	case End:
		return "end"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Op is one recorded call about one lease, with its interval in Unix
// nanoseconds of the machine's clock (shared by every process on it).
type Op struct {
	Kind  Kind   `json:"kind"`
	Node  string `json:"node"`
	Fence uint64 `json:"fence"`
	// Keys are the node's concurrency keys when the lease was granted
	// (Grant only; a running node's keys do not change).
	Keys []string `json:"keys,omitempty"`
	// Queue is the node's queue (Grant only).
	Queue string `json:"queue,omitempty"`
	// Renewed says a Grant's answer was the holder's own lease renewed (a
	// re-claim), not a new one: the lease was granted earlier, by a call
	// the history may not hold.
	Renewed bool `json:"renewed,omitempty"`
	// Call is when the call was sent; Return when its answer came (End:
	// unused, the answer does not matter).
	Call   int64 `json:"call"`
	Return int64 `json:"return,omitempty"`
	// Expires is the lease's expiry the answer named, Unix ns (Grant,
	// Renew).
	Expires int64 `json:"expires,omitempty"`
}

// Recorder collects a history from concurrent clients. Safe for concurrent
// use.
type Recorder struct {
	mu  sync.Mutex
	ops []Op
}

// Now is the recorder's clock.
func Now() int64 { return time.Now().UnixNano() }

// Add records op.
func (r *Recorder) Add(op Op) {
	op.Keys = slices.Clone(op.Keys)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

// Ops is a copy of the history recorded so far.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}
