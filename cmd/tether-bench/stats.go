package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// latencyCap is how many samples a recorder reserves per request type up
// front, so that appending in the hot loop rarely allocates.
const latencyCap = 1 << 15

// recorder keeps every latency one client measured, per request type, and its
// errors by status. It belongs to one goroutine; merge combines them.
type recorder struct {
	lat    map[string][]time.Duration
	errors map[string]int
}

func newRecorder() *recorder {
	return &recorder{lat: map[string][]time.Duration{}, errors: map[string]int{}}
}

func (r *recorder) add(kind string, d time.Duration) {
	s, ok := r.lat[kind]
	if !ok {
		s = make([]time.Duration, 0, latencyCap)
	}
	r.lat[kind] = append(s, d)
}

func (r *recorder) fail(key string) { r.errors[key]++ }

// merge folds every recorder into one (the inputs are left as they were).
func merge(rs ...*recorder) *recorder {
	out := newRecorder()
	for _, r := range rs {
		for k, s := range r.lat {
			out.lat[k] = append(out.lat[k], s...)
		}
		for k, n := range r.errors {
			out.errors[k] += n
		}
	}
	return out
}

// percentiles are the summary of one request type, in milliseconds.
type percentiles struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// summarize sorts s in place and reads the nearest-rank percentiles.
func summarize(s []time.Duration) percentiles {
	if len(s) == 0 {
		return percentiles{}
	}
	slices.Sort(s)
	return percentiles{
		N: len(s), P50: ms(rank(s, 0.50)), P99: ms(rank(s, 0.99)),
		P999: ms(rank(s, 0.999)), Max: ms(s[len(s)-1]),
	}
}

func rank(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// result is one scenario's report; its JSON form is what -json prints.
type result struct {
	Scenario  string                 `json:"scenario"`
	Clients   int                    `json:"clients"`
	DurationS float64                `json:"duration_s"`
	Ops       int64                  `json:"ops"`
	OpsPerS   float64                `json:"ops_per_s"`
	Latency   map[string]percentiles `json:"latency_ms"`
	Errors    map[string]int         `json:"errors"`
	RSSPeakMB float64                `json:"server_rss_peak_mb"`
	CPUS      float64                `json:"server_cpu_s"`
	WallS     float64                `json:"wall_s"`
	// Figures are a scenario's own measures beyond the common ones, by
	// name with the unit last (g: heap_inuse_per_node_b, startup_s, ...).
	Figures map[string]float64 `json:"figures,omitempty"`
	// StoreWritesPerS are the servers' store writes (write transactions
	// applied) per second in the window.
	StoreWritesPerS float64 `json:"store_writes_per_s,omitempty"`
	// EtcdPutsPerS is etcd's own benchmark put rate with as many clients,
	// and EtcdRatio StoreWritesPerS ÷ EtcdPutsPerS (-etcd-benchmark).
	EtcdPutsPerS float64 `json:"etcd_puts_per_s,omitempty"`
	EtcdRatio    float64 `json:"etcd_ratio,omitempty"`
	Notes        string  `json:"notes"`
	notes        []string
}

func newResult(name string, clients int) *result {
	return &result{Scenario: name, Clients: clients, Latency: map[string]percentiles{}, Errors: map[string]int{}}
}

func (r *result) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// fill sets ops, the rate over d, and the latencies and errors of rec.
func (r *result) fill(ops int64, d time.Duration, rec *recorder) {
	r.Ops = ops
	r.DurationS = round3(d.Seconds())
	if d > 0 {
		r.OpsPerS = math.Round(float64(ops) / d.Seconds())
	}
	for k, s := range rec.lat {
		r.Latency[k] = summarize(s)
	}
	maps.Copy(r.Errors, rec.errors)
}

func (r *result) figure(name string, v float64) {
	if r.Figures == nil {
		r.Figures = map[string]float64{}
	}
	r.Figures[name] = v
}

func (r *result) finish() { r.Notes = strings.Join(r.notes, "; ") }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// print writes r for people.
func (r *result) print(w io.Writer) {
	fmt.Fprintf(w, "== %s  (clients %d, %.2fs measured, %.1fs wall)\n", r.Scenario, r.Clients, r.DurationS, r.WallS)
	fmt.Fprintf(w, "   ops %d   %.0f ops/s   server: peak RSS %.1f MB, CPU %.2f s\n", r.Ops, r.OpsPerS, r.RSSPeakMB, r.CPUS)
	kinds := slices.Sorted(maps.Keys(r.Latency))
	if len(kinds) > 0 {
		fmt.Fprintf(w, "   %-22s %9s %9s %9s %9s %9s\n", "latency (ms)", "n", "p50", "p99", "p99.9", "max")
		for _, k := range kinds {
			p := r.Latency[k]
			fmt.Fprintf(w, "   %-22s %9d %9.3f %9.3f %9.3f %9.3f\n", k, p.N, p.P50, p.P99, p.P999, p.Max)
		}
	}
	if len(r.Errors) == 0 {
		fmt.Fprintf(w, "   errors: none\n")
	} else {
		keys := slices.Sorted(maps.Keys(r.Errors))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s ×%d", k, r.Errors[k])
		}
		fmt.Fprintf(w, "   errors: %s\n", strings.Join(parts, ", "))
	}
	if len(r.Figures) > 0 {
		names := slices.Sorted(maps.Keys(r.Figures))
		parts := make([]string, len(names))
		for i, k := range names {
			parts[i] = k + " " + strconv.FormatFloat(r.Figures[k], 'f', -1, 64)
		}
		fmt.Fprintf(w, "   figures: %s\n", strings.Join(parts, ", "))
	}
	for _, n := range r.notes {
		fmt.Fprintf(w, "   - %s\n", n)
	}
	fmt.Fprintln(w)
}

// lagSummary summarizes lags given in milliseconds (already measured as
// integers, so no rounding is lost).
func lagSummary(lags []int64) percentiles {
	d := make([]time.Duration, len(lags))
	for i, l := range lags {
		d[i] = time.Duration(l) * time.Millisecond
	}
	return summarize(d)
}
