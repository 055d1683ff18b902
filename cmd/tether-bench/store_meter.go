package main

import (
	"bufio"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// storeUsage is what the server's write path did: from its tether_store_*
// counters on /metrics.
type storeUsage struct {
	writes, commits, keys, bytes, overtaken float64
	commitSeconds                           float64
	forwarded                               float64 // requests a cluster's front passed to their shard's owner
}

func (u storeUsage) minus(v storeUsage) storeUsage {
	return storeUsage{u.writes - v.writes, u.commits - v.commits, u.keys - v.keys, u.bytes - v.bytes, u.overtaken - v.overtaken, u.commitSeconds - v.commitSeconds, u.forwarded - v.forwarded}
}

// storeCounters sums the servers' write-path counters.
func storeCounters(srvs []*serverProc) storeUsage {
	var sum storeUsage
	for _, p := range srvs {
		u := p.storeCounters()
		sum = storeUsage{sum.writes + u.writes, sum.commits + u.commits, sum.keys + u.keys, sum.bytes + u.bytes, sum.overtaken + u.overtaken, sum.commitSeconds + u.commitSeconds, sum.forwarded + u.forwarded}
	}
	return sum
}

// storeCounters reads the server's write-path counters (zero when it cannot).
func (p *serverProc) storeCounters() storeUsage {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(p.url + "/metrics")
	if err != nil {
		return storeUsage{}
	}
	defer resp.Body.Close()
	return parseStoreCounters(resp.Body)
}

// parseGauges reads the unlabelled samples of the named metrics.
func parseGauges(r io.Reader, names ...string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// parseStoreCounters sums the write-path counters of a /metrics page over
// their series: a server of a cluster labels each shard's ({shard="03"}).
func parseStoreCounters(r io.Reader) storeUsage {
	var u storeUsage
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(line[:i], "{")
		switch name {
		case "tether_store_writes_total":
			u.writes += v
		case "tether_store_fsyncs_total":
			u.commits += v
		case "tether_store_keys_written_total":
			u.keys += v
		case "tether_store_bytes_written_total":
			u.bytes += v
		case "tether_store_fsync_seconds_total":
			u.commitSeconds += v
		case "tether_store_overtaken_total":
			u.overtaken += v
		case "tether_cluster_forwarded_requests_total":
			u.forwarded += v
		}
	}
	return u
}

// storeNote reports the write path in the window, per op (per job where an
// op is a job).
func storeNote(r *result, u storeUsage, ops int64) {
	if u.forwarded > 0 {
		r.note("cluster: %.0f requests forwarded to their shard's owner in the window", u.forwarded)
	}
	if u.commits <= 0 || ops <= 0 {
		return
	}
	if r.DurationS > 0 {
		r.StoreWritesPerS = round3(u.writes / r.DurationS)
	}
	r.note("store in the window: %.0f writes in %.0f commits (%.1f writes/commit, mean commit %.0f µs); per op %.1f keys, %.0f bytes written",
		u.writes, u.commits, u.writes/u.commits, u.commitSeconds/u.commits*1e6, u.keys/float64(ops), u.bytes/float64(ops))
	if u.overtaken > 0 {
		r.note("etcd: %.0f pipelined transactions were overtaken by a later one that carried their writes", u.overtaken)
	}
}
