package linearize

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Report is the verdict on one history.
type Report struct {
	// Result is Illegal if any node's history is, else Unknown if porcupine
	// could not decide some node's within the timeout, else Ok.
	Result     porcupine.CheckResult
	Operations int // porcupine operations checked (restarts counted once per node)
	Partitions int
	// Undecided counts the partitions (and their operations) porcupine gave
	// up on; the rest were decided.
	Undecided, UndecidedOps int
	Took                    time.Duration
	// Visualization is the HTML file porcupine drew of the first illegal
	// node's history ("" when none, or it could not be written).
	Visualization string
	// Detail shows the first illegal node's history around the violation.
	Detail string
}

func (r Report) String() string {
	s := fmt.Sprintf("%s: %d operations in %d partitions checked in %v", r.Result, r.Operations, r.Partitions, r.Took.Round(time.Millisecond))
	if r.Undecided > 0 {
		s += fmt.Sprintf(" (%d partitions, %d operations, undecided within the timeout)", r.Undecided, r.UndecidedOps)
	}
	if r.Visualization != "" {
		s += "; see " + r.Visualization
	}
	if r.Detail != "" {
		s += "\n" + r.Detail
	}
	return s
}

// Check decides whether history is linearizable under cfg, node by node,
// giving up on a node after timeout. The first illegal node is explained,
// and drawn into dir (when dir is not empty) for a person to read.
func Check(cfg Config, ops []Op, timeout time.Duration, dir string) Report {
	return CheckOperations(cfg, Operations(ops), timeout, dir)
}

// CheckOperations is Check for a history already in porcupine's terms.
func CheckOperations(cfg Config, history []porcupine.Operation, timeout time.Duration, dir string) Report {
	m := Model(cfg)
	start := time.Now()
	parts := m.Partition(history)
	r := Report{Result: porcupine.Ok, Operations: len(history), Partitions: len(parts)}
	var illegal []porcupine.Operation
	for _, part := range parts {
		switch porcupine.CheckOperationsTimeout(m, part, timeout) {
		case porcupine.Illegal:
			r.Result = porcupine.Illegal
			if illegal == nil {
				illegal = part
			}
		case porcupine.Unknown:
			r.Undecided++
			r.UndecidedOps += len(part)
			if r.Result == porcupine.Ok {
				r.Result = porcupine.Unknown
			}
		}
	}
	r.Took = time.Since(start)
	if illegal == nil {
		return r
	}
	r.Detail = explain(m, illegal, timeout)
	if dir != "" {
		_, info := porcupine.CheckOperationsVerbose(m, illegal, timeout)
		path := filepath.Join(dir, "linearize-illegal.html")
		if err := porcupine.VisualizePath(m, info, path); err != nil {
			r.Detail += fmt.Sprintf("\n(error drawing the history: %v)", err)
		} else {
			r.Visualization = path
		}
	}
	return r
}

// explain shows an illegal node's history: the last operations, in call
// order, of its shortest illegal prefix (bisected by call order, which is a
// good guide though not an exact one).
func explain(m porcupine.Model, part []porcupine.Operation, timeout time.Duration) string {
	part = slices.Clone(part)
	slices.SortFunc(part, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	lo, hi := 1, len(part)
	for lo < hi {
		mid := (lo + hi) / 2
		if porcupine.CheckOperationsTimeout(m, part[:mid], timeout) == porcupine.Illegal {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	shown := part[max(0, lo-explainOps):lo]
	t0 := part[lo-1].Call
	var b strings.Builder
	fmt.Fprintf(&b, "node %s: %d operations; the first %d (by call) are illegal, the last %d of them (ms from the last call):\n",
		part[0].Input.(Input).Node, len(part), lo, len(shown))
	for _, op := range shown {
		fmt.Fprintf(&b, "  [%9.3f, %9.3f]  %s\n", ms(op.Call-t0), ms(op.Return-t0), describe(op.Input.(Input), op.Output.(Output)))
	}
	return b.String()
}

// explainOps is how many operations explain shows.
const explainOps = 40

func ms(ns int64) float64 { return float64(ns) / 1e6 }
