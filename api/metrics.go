package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/queuemetrics"
	"github.com/tether-run/tether/internal/retention"
	"github.com/tether-run/tether/internal/version"
)

// metrics is one registry per server: no package-level state.
type metrics struct {
	queueMeter *queuemetrics.Meter
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	codes      [600]string // the label of each status code, made once
}

// retention registers the retention cleaner's totals.
func (m *metrics) retention(st *retention.Stats) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_retention_nodes_removed_total", Help: "Finished nodes removed by retention."},
			func() float64 { return float64(st.Nodes.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_retention_event_groups_removed_total", Help: "Event groups (the events of one transaction) removed by retention."},
			func() float64 { return float64(st.Groups.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_retention_passes_total", Help: "Passes of the retention cleaner."},
			func() float64 { return float64(st.Passes.Load()) }),
	)
}

// queues registers the per-queue series (package queuemetrics); the meter
// also keeps each queue's last hour for GET /v1/queues/{queue}/throughput.
func (m *metrics) queues(store *graphstore.Store, lim queuemetrics.Limits) {
	m.queueMeter = queuemetrics.New(store, lim)
	if err := m.queueMeter.Register(m.reg); err != nil {
		panic(err) // a name registered twice: a programming error, as MustRegister
	}
}

func newMetrics(stats *leasing.Stats, store *graphstore.StoreStats) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_http_requests_total", Help: "HTTP requests by route, method and status code.",
		}, []string{"method", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tether_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"method", "route"}),
	}
	for code := range m.codes {
		m.codes[code] = strconv.Itoa(code)
	}
	build := version.Get()
	reg.MustRegister(m.requests, m.latency,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tether_build_info", Help: "Always 1; the labels say which build is running.",
			ConstLabels: prometheus.Labels{"version": build.Version, "revision": build.Commit, "goversion": build.GoVersion},
		}, func() float64 { return 1 }),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_claims_total", Help: "New leases granted."},
			func() float64 { return float64(stats.Claims.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_renewals_total", Help: "Lease renewals."},
			func() float64 { return float64(stats.Renewals.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_expiries_total", Help: "Leases that expired or timed out."},
			func() float64 { return float64(stats.Expiries.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tether_live_leases", Help: "Leases held right now."},
			func() float64 { return float64(stats.Live.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_store_batches_total", Help: "Badger commits made behind the log (each holds many writes)."},
			func() float64 { return float64(store.Batches.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_store_writer_snapshots_total", Help: "Badger snapshots the writer had to open (a read of something not in memory)."},
			func() float64 { return float64(store.Snapshots.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_store_keys_written_total", Help: "Keys written (set or deleted) to the log."},
			func() float64 { return float64(store.Keys.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_store_bytes_written_total", Help: "Bytes of keys and values written to the log."},
			func() float64 { return float64(store.Bytes.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_store_writes_total", Help: "Write transactions applied."},
			func() float64 { return float64(store.Closures.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_store_fsyncs_total", Help: "Write-ahead log syncs (group commit: one fdatasync covers many writes)."},
			func() float64 { return float64(store.Syncs.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_store_overtaken_total", Help: "Pipelined etcd transactions that a later one, carrying their writes, committed before."},
			func() float64 { return float64(store.Overtaken.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_store_fsync_seconds_total", Help: "Time spent appending to the write-ahead log and syncing it."},
			func() float64 { return float64(store.SyncNanos.Load()) / 1e9 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tether_store_disk_full", Help: "1 while the data directory's disk is full and writes are refused, 2 when renewals are refused too, else 0."},
			func() float64 { return float64(store.DiskFull.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tether_store_disk_free_bytes", Help: "Free bytes on the data directory's filesystem at the store's last look."},
			func() float64 { return float64(store.DiskFree.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_store_writes_refused_total", Help: "Writes refused because the data directory's disk was full."},
			func() float64 { return float64(store.Refused.Load()) }),
	)
	return m
}

func (m *metrics) observe(method, route string, status int, d time.Duration) {
	var code string
	if status >= 0 && status < len(m.codes) {
		code = m.codes[status]
	} else {
		code = strconv.Itoa(status)
	}
	m.requests.WithLabelValues(method, route, code).Inc()
	m.latency.WithLabelValues(method, route).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
