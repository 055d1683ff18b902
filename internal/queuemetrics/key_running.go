package queuemetrics

import (
	"cmp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// tether_key_running: the live leases per concurrency key, read at scrape
// time from the store's running counts (graphstore.Store.EachKeyRunning,
// the counts flow control holds its limits to), O(keys with live leases),
// never a read of the store. Its labels are tenant and key under the same
// caps as the per-queue series: at most Limits.MaxTenants tenants and, per
// tenant, Limits.MaxQueues keys get label values of their own, first come
// (in name order within a scrape) first served and kept for the life of
// the process; the rest are summed under "other". A key with nothing
// running is absent, unless it holds a label of its own (then 0), so a
// series that was shown does not vanish between two runs.

// keyRunning is one key's count at a scrape.
type keyRunning struct {
	tenant, key string
	n           int64
}

func keyRunningDesc() *prometheus.Desc {
	return prometheus.NewDesc("tether_key_running",
		"Live leases on nodes carrying the concurrency key (keys past the label caps summed under key=\"other\").",
		[]string{"tenant", "key"}, nil)
}

// collectKeys sends the running-per-key gauge (part of Collect).
func (m *Meter) collectKeys(ch chan<- prometheus.Metric) {
	var counts []keyRunning
	m.store.EachKeyRunning(func(tenant, key string, n int64) {
		if n > 0 {
			counts = append(counts, keyRunning{tenant, key, n})
		}
	})
	slices.SortFunc(counts, func(a, b keyRunning) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.key, b.key))
	})
	sums := map[labelKey]int64{}
	m.keyLabels.mu.Lock()
	for _, c := range counts {
		sums[m.keyLabels.label(c.tenant, c.key)] += c.n
	}
	// Keys labelled before and idle now read 0.
	for tenant, keys := range m.keyLabels.tenants {
		for key := range keys {
			k := labelKey{tenant, key}
			if _, ok := sums[k]; !ok {
				sums[k] = 0
			}
		}
	}
	m.keyLabels.mu.Unlock()
	for k, n := range sums {
		ch <- prometheus.MustNewConstMetric(m.keyRunningDesc, prometheus.GaugeValue, float64(n), k.tenant, k.queue)
	}
}
