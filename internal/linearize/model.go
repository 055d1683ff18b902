package linearize

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/anishathalye/porcupine"
)

// The node statuses the model moves through (nodes are created in a queue,
// so at rest they are queued).
const (
	StatusQueued  = "queued"
	StatusRunning = "running"
	StatusDone    = "done"
	StatusDead    = "dead"
)

// State is one node as the model knows it.
type State struct {
	Status string
	// The lease, when Status is running (it may have lapsed by the clock
	// and not yet been settled).
	Holder string
	Fence  uint64
	TTL    int64 // ns
	// The lease ends somewhere in [ExpLo, ExpHi] (Unix ns): the server set
	// it at an instant inside the interval of the call that set it, and
	// when it answered that call, within the millisecond its answer named.
	ExpLo, ExpHi int64
	// Told says [ExpLo, ExpHi] is the millisecond a claim's or a renewal's
	// answer named (the server's own clock, compared with no margin); false
	// when it comes from the client's clock (an unknown outcome, a restart).
	Told bool
	// LastFence is the last fence handed out on the node.
	LastFence uint64
	Attempts  int64
	// The run that completed the node, for the idempotent retry of a
	// complete.
	DoneBy    string
	DoneFence uint64
}

// Config tunes how the model reads time.
type Config struct {
	// MaxAttempts is the nodes' max_attempts.
	MaxAttempts int64
	// Margin widens every expiry window both ways, for the server's
	// millisecond timestamps and the clock reads around a call.
	Margin time.Duration
	// ReaperSlack is how long after its expiry a GET may still show a lapsed
	// lease: the lease is dead at once for every write, but the stored record
	// says running until the reaper settles it.
	ReaperSlack time.Duration
}

// DefaultConfig suits a server with a fast reaper on a loaded machine.
func DefaultConfig(maxAttempts int64) Config {
	return Config{MaxAttempts: maxAttempts, Margin: 25 * time.Millisecond, ReaperSlack: 3 * time.Second}
}

// Model is the porcupine model of the nodes' leases, partitioned by node.
func Model(cfg Config) porcupine.Model {
	m := porcupine.NondeterministicModel{
		Partition: partitionByNode,
		Init:      func() []any { return []any{State{Status: StatusQueued}} },
		Step: func(state, input, output any) []any {
			return cfg.step(state.(State), input.(Input), output.(Output))
		},
		Hash: func(state any) uint64 {
			h := fnv.New64a()
			fmt.Fprintf(h, "%v", state.(State))
			return h.Sum64()
		},
		DescribeOperation: func(input, output any) string { return describe(input.(Input), output.(Output)) },
		DescribeState: func(state any) string {
			s := state.(State)
			if s.Status != StatusRunning {
				return fmt.Sprintf("%s last_fence=%d attempts=%d", s.Status, s.LastFence, s.Attempts)
			}
			return fmt.Sprintf("running by %s fence=%d attempts=%d expires in [%s, %s]", s.Holder, s.Fence, s.Attempts,
				stampMS(s.ExpLo/int64(time.Millisecond)), stampMS(s.ExpHi/int64(time.Millisecond)))
		},
	}
	return m.ToModel()
}

func partitionByNode(history []porcupine.Operation) [][]porcupine.Operation {
	byNode := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range history {
		n := op.Input.(Input).Node
		i, ok := byNode[n]
		if !ok {
			i = len(parts)
			byNode[n] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// step is every state the node may be in after in answered out, starting
// from s; none when the answer is impossible.
func (cfg Config) step(s State, in Input, out Output) []any {
	var next []any
	for _, pre := range cfg.at(s, in) {
		want, after := cfg.decide(pre, in)
		switch {
		case out.Result == Unknown:
			// It may not have reached the server, or it may have taken
			// effect; it cannot have done anything else.
			next = append(next, pre)
			if after != pre {
				next = append(next, after)
			}
		case out.withoutExpiry() == want:
			var ok bool
			if after, ok = cfg.expiry(pre, after, in, out); !ok {
				continue
			}
			next = append(next, after)
		default:
			continue
		}
		if pre != s && after == pre && (in.Kind == Renew || in.Kind == Complete || in.Kind == Restart) {
			// The lease had lapsed and this did not settle it (a claim or a
			// release settles it first; a renew or a complete only refuses;
			// a restart leaves it to the reaper): the stored record may
			// still show it until the reaper runs.
			next = append(next, s)
		}
	}
	return next
}

// withoutExpiry is out without its expiry, which decide does not give (the
// model knows it as an interval; expiry checks it).
func (out Output) withoutExpiry() Output {
	out.Expires = 0
	return out
}

// expiry checks the expiry an answer shows, and narrows the state after it
// to what the answer told. A read that shows a lease must show its expiry as
// the state knows it: an answered renewal's, never an older one. A granted
// claim or a renewal must name an expiry inside the interval decide gave it
// (now + TTL at some instant of the call), and the lease then ends within
// the millisecond it named.
func (cfg Config) expiry(pre, after State, in Input, out Output) (State, bool) {
	const ms = int64(time.Millisecond)
	shown := out.Expires * ms // the expiry is in [shown, shown+ms)
	switch {
	case out.Result != OK:
		return after, out.Expires == 0
	case in.Kind == Read && out.Holder == "":
		return after, out.Expires == 0
	case in.Kind == Read:
		slop := int64(cfg.Margin)
		if pre.Told {
			slop = 0
		}
		return after, shown <= pre.ExpHi+slop && shown+ms+slop > pre.ExpLo
	case in.Kind == Claim || in.Kind == Renew:
		margin := int64(cfg.Margin)
		if shown > after.ExpHi+margin || shown+ms+margin <= after.ExpLo {
			return after, false
		}
		after.ExpLo, after.ExpHi, after.Told = shown, shown+ms-1, true
		return after, true
	}
	return after, out.Expires == 0
}

// at is the states s may be in at the instant in takes effect: a lease whose
// window lies before the call has expired, one whose window lies after the
// return is live, and one in between may be either.
func (cfg Config) at(s State, in Input) []State {
	if s.Status != StatusRunning {
		return []State{s}
	}
	margin := int64(cfg.Margin)
	slack := int64(0)
	if in.Kind == Read {
		slack = int64(cfg.ReaperSlack)
	}
	switch {
	case in.Return+margin < s.ExpLo:
		return []State{s}
	case in.Call > s.ExpHi+margin+slack:
		return []State{cfg.expire(s)}
	default:
		return []State{s, cfg.expire(s)}
	}
}

// expire is s once its lease has lapsed: the run keeps its attempt, and the
// node goes back to its queue, or dead when it is out of attempts.
func (cfg Config) expire(s State) State {
	s = endRun(s)
	if s.Attempts >= cfg.MaxAttempts {
		s.Status = StatusDead
	}
	return s
}

func endRun(s State) State {
	s.Status = StatusQueued
	s.Holder, s.Fence, s.TTL, s.ExpLo, s.ExpHi, s.Told = "", 0, 0, 0, 0, false
	return s
}

// restart is what Start does to a live lease: its full TTL afresh from the
// restart, never less than it had.
func restart(s State, in Input) State {
	if s.Status == StatusRunning {
		lo, hi := max(s.ExpLo, in.Call+s.TTL), max(s.ExpHi, in.Return+s.TTL)
		if lo != s.ExpLo || hi != s.ExpHi {
			s.ExpLo, s.ExpHi, s.Told = lo, hi, false
		}
	}
	return s
}

// decide is the answer the server owes in and the state after it, given the
// node is in s (with any lapsed lease already settled) when in takes effect.
func (cfg Config) decide(s State, in Input) (Output, State) {
	running := s.Status == StatusRunning
	lost := Output{Result: LeaseLost}
	if running {
		lost.Holder = s.Holder
	}
	fenceOK := in.Fence == 0 || in.Fence == s.Fence
	switch in.Kind {
	case Claim:
		switch {
		case running && s.Holder != in.Client:
			return Output{Result: Conflict, Holder: s.Holder}, s
		case running:
			// Re-claiming your own live claim renews it with the TTL asked.
			s.TTL = int64(in.TTL)
			s.ExpLo, s.ExpHi, s.Told = in.Call+s.TTL, in.Return+s.TTL, false
			return Output{Result: OK, Status: StatusRunning, Holder: in.Client, Fence: s.Fence, Renewed: true, Attempts: s.Attempts}, s
		case s.Status == StatusDone || s.Status == StatusDead || s.Attempts >= cfg.MaxAttempts:
			return Output{Result: NotClaimable}, s
		}
		s.Status, s.Holder = StatusRunning, in.Client
		s.LastFence++
		s.Fence = s.LastFence
		s.Attempts++
		s.TTL = int64(in.TTL)
		s.ExpLo, s.ExpHi, s.Told = in.Call+s.TTL, in.Return+s.TTL, false
		return Output{Result: OK, Status: StatusRunning, Holder: in.Client, Fence: s.Fence, Attempts: s.Attempts}, s
	case Renew:
		if !running || s.Holder != in.Client || !fenceOK {
			return lost, s
		}
		s.ExpLo, s.ExpHi, s.Told = in.Call+s.TTL, in.Return+s.TTL, false
		return Output{Result: OK, Holder: in.Client, Fence: s.Fence}, s
	case Release:
		switch {
		case !running:
			// Nothing held: releasing succeeds and changes nothing.
			return Output{Result: OK, Status: s.Status}, s
		case s.Holder != in.Client:
			return Output{Result: Conflict, Holder: s.Holder}, s
		case !fenceOK:
			return lost, s
		}
		s = endRun(s)
		if s.Attempts > 0 {
			s.Attempts-- // a voluntary release gives its attempt back
		}
		return Output{Result: OK, Status: s.Status}, s
	case Complete:
		if s.Status == StatusDone && s.DoneBy == in.Client && (in.Fence == 0 || in.Fence == s.DoneFence) {
			return Output{Result: OK, Status: StatusDone}, s // a retried completion
		}
		if !running || s.Holder != in.Client || !fenceOK {
			return lost, s
		}
		fence := s.Fence
		s = endRun(s)
		s.Status, s.DoneBy, s.DoneFence = StatusDone, in.Client, fence
		return Output{Result: OK, Status: StatusDone}, s
	case Read:
		return Output{Result: OK, Status: s.Status, Holder: s.Holder, Fence: s.Fence, Attempts: s.Attempts}, s
	case Restart:
		return Output{Result: OK}, restart(s, in)
	}
	panic(fmt.Sprintf("linearize: no such operation %v", in.Kind))
}
