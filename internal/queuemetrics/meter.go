package queuemetrics

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// Meter is the per-queue series: a indexes.QueueMeter for the counters and
// histograms, a prometheus.Collector for the gauges. Register it with
// Register.
type Meter struct {
	store  *graphstore.Store
	labels *labeller
	// keyLabels hands out the (tenant, key) label values of
	// tether_key_running under the same caps (key_running.go).
	keyLabels *labeller

	claimWait, runTime    *prometheus.HistogramVec
	created               *prometheus.CounterVec
	completed, failed     *prometheus.CounterVec
	dead, expired, lapsed *prometheus.CounterVec
	throttled             *prometheus.CounterVec // throttled.go
	// series caches each label pair's children (under labels.mu), so an
	// observation hashes no label values.
	series map[labelKey]*series
	// history is each queue's last hour, minute by minute, by tenant and
	// queue, never by label (throughput.go).
	history *histories

	depthDesc, ageDesc, keyRunningDesc *prometheus.Desc
}

// series are one label pair's counters and histograms.
type series struct {
	claimWait, runTime                                prometheus.Observer
	created, completed, failed, dead, expired, lapsed prometheus.Counter
}

var (
	claimWaitBuckets = []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600}
	runTimeBuckets   = []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200}
)

// New builds the meter of store's queues; Register wires it.
func New(store *graphstore.Store, lim Limits) *Meter {
	tq := []string{"tenant", "queue"}
	return &Meter{
		store:          store,
		labels:         newLabeller(lim),
		keyLabels:      newLabeller(lim),
		keyRunningDesc: keyRunningDesc(),
		series:         map[labelKey]*series{},
		history:        newHistories(lim.withDefaults().MaxQueues, MaxHistories),
		claimWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tether_queue_claim_wait_seconds", Help: "How long a node of the queue was ready before it was claimed.",
			Buckets: claimWaitBuckets,
		}, tq),
		runTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tether_queue_run_seconds", Help: "How long a run of a node of the queue lasted, from its claim to its end (completed, failed, released, expired or cancelled).",
			Buckets: runTimeBuckets,
		}, tq),
		created:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_queue_created_total", Help: "Nodes created in the queue."}, tq),
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_queue_completions_total", Help: "Nodes of the queue completed."}, tq),
		failed:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_queue_failures_total", Help: "Failures of nodes of the queue (retried or not)."}, tq),
		dead:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_queue_dead_total", Help: "Nodes of the queue dead-lettered (out of attempts)."}, tq),
		expired:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_queue_expiries_total", Help: "Leases on nodes of the queue that expired."}, tq),
		lapsed:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tether_queue_node_expiries_total", Help: "Nodes of the queue that ended expired: not claimed by their start_by."}, tq),
		throttled: throttledVec(),
		depthDesc: prometheus.NewDesc("tether_queue_depth", "Nodes of the queue by status.", []string{"tenant", "queue", "status"}, nil),
		ageDesc:   prometheus.NewDesc("tether_queue_oldest_ready_age_seconds", "Age of the queue's oldest claimable node (0 when none is).", tq, nil),
	}
}

// Register adds the series to reg and has the store tell the meter what
// each transaction did.
func (m *Meter) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m, m.claimWait, m.runTime, m.created, m.completed, m.failed, m.dead, m.expired, m.lapsed, m.throttled} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	m.store.SetQueueMeter(m)
	return nil
}

// QueueObserved counts one durable transaction's outcomes
// (indexes.QueueMeter).
func (m *Meter) QueueObserved(obs []indexes.QueueObservation) {
	now := m.store.Clock().Now()
	m.labels.mu.Lock()
	defer m.labels.mu.Unlock()
	m.history.mu.Lock()
	defer m.history.mu.Unlock()
	for i := range obs {
		o := &obs[i]
		k := m.labels.label(o.Tenant, o.Queue)
		s := m.seriesOf(k)
		m.history.count(o.Tenant, o.Queue, o.What, now)
		switch o.What {
		case indexes.QueueCreated:
			s.created.Inc()
		case indexes.QueueClaimed:
			s.claimWait.Observe(o.Took.Seconds())
		case indexes.QueueRunEnded:
			s.runTime.Observe(o.Took.Seconds())
		case indexes.QueueCompleted:
			s.completed.Inc()
		case indexes.QueueFailed:
			s.failed.Inc()
		case indexes.QueueDead:
			s.dead.Inc()
		case indexes.QueueExpired:
			s.expired.Inc()
		case indexes.QueueLapsed:
			s.lapsed.Inc()
		}
	}
}

// seriesOf returns k's children, made on first use (call with labels.mu
// held). Made at once, every counter of a queue shows 0 from its first
// outcome on, so a rate over it has a start.
func (m *Meter) seriesOf(k labelKey) *series {
	s, ok := m.series[k]
	if !ok {
		s = &series{
			claimWait: m.claimWait.WithLabelValues(k.tenant, k.queue),
			runTime:   m.runTime.WithLabelValues(k.tenant, k.queue),
			created:   m.created.WithLabelValues(k.tenant, k.queue),
			completed: m.completed.WithLabelValues(k.tenant, k.queue),
			failed:    m.failed.WithLabelValues(k.tenant, k.queue),
			dead:      m.dead.WithLabelValues(k.tenant, k.queue),
			lapsed:    m.lapsed.WithLabelValues(k.tenant, k.queue),
			expired:   m.expired.WithLabelValues(k.tenant, k.queue),
		}
		m.series[k] = s
	}
	return s
}

// Describe sends the gauges' descriptions (prometheus.Collector).
func (m *Meter) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.depthDesc
	ch <- m.ageDesc
	ch <- m.keyRunningDesc
}

// depthKey is one depth series.
type depthKey struct {
	labelKey
	status records.Status
}

// queueStat is one queue's numbers at a scrape.
type queueStat struct {
	tenant, queue string
	counts        []statusCount
	oldest        time.Time
}

type statusCount struct {
	status records.Status
	n      int64
}

// Collect computes the gauges from the store's in-memory queue stats
// (prometheus.Collector): O(queues), no read of the store. Queues not yet
// labelled get their labels in name order, so which ones the caps leave
// out does not depend on a map's order.
func (m *Meter) Collect(ch chan<- prometheus.Metric) {
	now := m.store.Clock().Now()
	var stats []queueStat
	m.store.EachQueueStat(func(tenant, queue string, counts map[records.Status]int64, _ int, oldest time.Time) {
		qs := queueStat{tenant: tenant, queue: queue, oldest: oldest, counts: make([]statusCount, 0, len(counts))}
		for st, n := range counts {
			qs.counts = append(qs.counts, statusCount{st, n})
		}
		stats = append(stats, qs)
	})
	slices.SortFunc(stats, func(a, b queueStat) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.queue, b.queue))
	})
	depth := map[depthKey]int64{}
	age := map[labelKey]float64{}
	m.labels.mu.Lock()
	for _, qs := range stats {
		k := m.labels.label(qs.tenant, qs.queue)
		for _, c := range qs.counts {
			depth[depthKey{k, c.status}] += c.n
		}
		a := 0.0
		if !qs.oldest.IsZero() {
			a = max(now.Sub(qs.oldest).Seconds(), 0)
		}
		age[k] = max(age[k], a)
	}
	m.labels.mu.Unlock()
	for k, n := range depth {
		ch <- prometheus.MustNewConstMetric(m.depthDesc, prometheus.GaugeValue, float64(n), k.tenant, k.queue, string(k.status))
	}
	for k, a := range age {
		ch <- prometheus.MustNewConstMetric(m.ageDesc, prometheus.GaugeValue, a, k.tenant, k.queue)
	}
	m.collectKeys(ch)
}
