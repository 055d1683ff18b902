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
	Result     porcupine.CheckResult
	Operations int // porcupine operations checked (restarts counted once per node)
	Partitions int
	Took       time.Duration
	// Visualization is the HTML file porcupine drew of an illegal history
	// ("" when the history is legal or it could not be written).
	Visualization string
	// Detail lists, in call order, the operations of the first node whose
	// history is illegal.
	Detail string
}

func (r Report) String() string {
	s := fmt.Sprintf("%s: %d operations in %d partitions checked in %v", r.Result, r.Operations, r.Partitions, r.Took.Round(time.Millisecond))
	if r.Visualization != "" {
		s += "; see " + r.Visualization
	}
	if r.Detail != "" {
		s += "\n" + r.Detail
	}
	return s
}

// Check decides whether history is linearizable under cfg, giving up after
// timeout (Result Unknown). An illegal history is drawn into dir (when dir is
// not empty) for a person to read.
func Check(cfg Config, history []porcupine.Operation, timeout time.Duration, dir string) Report {
	m := Model(cfg)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(m, history, timeout)
	r := Report{Result: res, Operations: len(history), Partitions: len(m.Partition(history)), Took: time.Since(start)}
	if res != porcupine.Illegal {
		return r
	}
	r.Detail = explain(m, history, timeout)
	if dir != "" {
		path := filepath.Join(dir, "linearize-illegal.html")
		if err := porcupine.VisualizePath(m, info, path); err != nil {
			r.Detail += fmt.Sprintf("\n(error drawing the history: %v)", err)
		} else {
			r.Visualization = path
		}
	}
	return r
}

// explain lists the operations of the first illegal partition, with their
// times in milliseconds from its first call.
func explain(m porcupine.Model, history []porcupine.Operation, timeout time.Duration) string {
	for _, part := range m.Partition(history) {
		if porcupine.CheckOperationsTimeout(m, part, timeout) != porcupine.Illegal {
			continue
		}
		part = slices.Clone(part)
		slices.SortFunc(part, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		t0 := part[0].Call
		var b strings.Builder
		fmt.Fprintf(&b, "node %s, %d operations:\n", part[0].Input.(Input).Node, len(part))
		for _, op := range part {
			fmt.Fprintf(&b, "  [%9.3f, %9.3f] ms  %s\n", ms(op.Call-t0), ms(op.Return-t0), describe(op.Input.(Input), op.Output.(Output)))
		}
		return b.String()
	}
	return ""
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
