package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/queuemetrics"
	"github.com/tether-run/tether/internal/retention"
	"github.com/tether-run/tether/internal/version"
)

// metrics are a server's two registries (no package-level state): reg
// holds the process-wide series, which anyone may read, and tenants those
// labelled by tenant and queue, which only a scrape token reads (Scrapers).
// A series that names a tenant or a queue never goes in reg.
type metrics struct {
	queueMeter *queuemetrics.Meter
	reg        *prometheus.Registry
	tenants    *prometheus.Registry
	// public and full serve reg, and reg with tenants.
	public, full http.Handler
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	codes        [600]string // the label of each status code, made once
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

// readiness registers tether_ready: what /ready answers, as a number.
func (m *metrics) readiness(ready func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tether_ready", Help: "1 when the server takes requests (GET /ready answers 200), 0 while it starts or drains.",
	}, func() float64 {
		if ready() {
			return 1
		}
		return 0
	}))
}

// queues registers the per-queue series (package queuemetrics); the meter
// also keeps each queue's last hour for GET /v1/queues/{queue}/throughput.
func (m *metrics) queues(store *graphstore.Store, lim queuemetrics.Limits) {
	m.queueMeter = queuemetrics.New(store, lim)
	if err := m.queueMeter.Register(m.tenants); err != nil {
		panic(err) // a name registered twice: a programming error, as MustRegister
	}
}

func newMetrics(stats *leasing.Stats, store *graphstore.StoreStats) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg:     reg,
		tenants: prometheus.NewRegistry(),
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
	m.public = promhttp.HandlerFor(m.gatherer(false), promhttp.HandlerOpts{})
	m.full = promhttp.HandlerFor(m.gatherer(true), promhttp.HandlerOpts{})
	return m
}

func (m *metrics) observe(method, route string, status int, d time.Duration) {
	var code string
	if status >= 0 && status < len(m.codes) {
		code = m.codes[status]
	} else {
		code = strconv.Itoa(status)
	}
	method = methodLabel(method)
	m.requests.WithLabelValues(method, route, code).Inc()
	m.latency.WithLabelValues(method, route).Observe(d.Seconds())
}

// otherMethod is the method label of every request whose method is not one
// of HTTP's own: the method is the client's to make up, and each made-up
// one would otherwise be a series for the life of the process.
const otherMethod = "other"

// methodLabel is method's label value: itself for HTTP's methods, else
// otherMethod.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return otherMethod
}

// gatherer is the series a scrape reads: every one when full, else the
// process-wide ones.
func (m *metrics) gatherer(full bool) prometheus.Gatherer {
	if full {
		return prometheus.Gatherers{m.reg, m.tenants}
	}
	return m.reg
}

// MetricsGatherers are the server's process-wide series and every series
// (those and the ones labelled by tenant and queue), for a front that
// serves /metrics itself (package cluster).
func (s *Server) MetricsGatherers() (public, full prometheus.Gatherer) {
	return s.metrics.gatherer(false), s.metrics.gatherer(true)
}

// MetricsHandler serves every series to anyone: what a metrics listener
// (MetricsListener) serves.
func (s *Server) MetricsHandler() http.Handler { return s.metrics.full }

// MetricsListener is the handler of a listener of its own
// (TETHER_METRICS_ADDR), which the operator keeps private: GET /metrics
// answered by all, and a problem for any other request.
func MetricsListener(all http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/metrics":
			writePlainProblem(w, newProblem(http.StatusNotFound, CodeNotFound, "no such endpoint: this listener serves GET /metrics only"))
		case r.Method != http.MethodGet:
			w.Header().Set("Allow", http.MethodGet)
			writePlainProblem(w, newProblem(http.StatusMethodNotAllowed, CodeBadRequest, "method not allowed on this endpoint"))
		case HasBody(r):
			writePlainProblem(w, newProblem(http.StatusBadRequest, CodeBadRequest, ErrBodyRefused.Error()))
		default:
			all.ServeHTTP(w, r)
		}
	})
}

// writePlainProblem answers p outside Echo.
func writePlainProblem(w http.ResponseWriter, p *Problem) {
	b, err := p.MarshalJSON()
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_, _ = w.Write(b)
}

// scrape is GET /metrics: the process-wide series, or every series for a
// scrape token (Scrapers).
func (s *Server) scrape(c echo.Context) error {
	full, err := s.scrapers.Full(c.Request())
	if err != nil {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tether"`)
		return err
	}
	h := s.metrics.public
	if full {
		h = s.metrics.full
	}
	h.ServeHTTP(c.Response(), c.Request())
	return nil
}
