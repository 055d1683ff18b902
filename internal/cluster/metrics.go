package cluster

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// metrics are the server's own (the cluster's, the process's) and, with a
// label shard, those of every shard served here. As a single server's
// (api.Scrapers), an anonymous scrape reads only the series that name no
// tenant and no queue; a scrape token or the metrics listener reads all.
type metrics struct {
	forwarded prometheus.Counter
	// elected counts the shards this server was elected owner of: its rate
	// is how often ownership moves here.
	elected prometheus.Counter
	// public and full serve the process-wide series and every series.
	public, full http.Handler
}

func newMetrics(n *Node) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_cluster_forwarded_requests_total", Help: "Requests passed on to the server that owns their tenant's shard.",
		}),
		elected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_cluster_shard_elections_total", Help: "Shards this server was elected owner of (each takes over or reopens a shard).",
		}),
	}
	reg.MustRegister(m.forwarded, m.elected,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tether_cluster_shards", Help: "The cluster's shard count."},
			func() float64 { return float64(n.cfg.Shards) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tether_cluster_shards_owned", Help: "Shards served by this server."},
			func() float64 { return float64(n.localCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tether_cluster_members", Help: "Live servers of the cluster, as this one sees them."},
			func() float64 { return float64(len(n.view().members)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tether_ready", Help: "1 when this server is a member of the cluster and not stopping (GET /ready also asks the store: etcd for alarms, PostgreSQL for an answer), else 0."},
			func() float64 {
				if _, member := n.view().members[n.ID()]; member && n.ctx.Err() == nil {
					return 1
				}
				return 0
			}),
	)
	m.public = promhttp.HandlerFor(prometheus.Gatherers{reg, shardGatherer(n, false)}, promhttp.HandlerOpts{})
	m.full = promhttp.HandlerFor(prometheus.Gatherers{reg, shardGatherer(n, true)}, promhttp.HandlerOpts{})
	return m
}

// serverOwn are the families every shard's server has but the front
// reports once, as its own: the process's and the server's state.
func serverOwn(name string) bool {
	return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || name == "tether_build_info" || name == "tether_ready"
}

// shardGatherer gathers the series of every shard served here (each shard's
// server keeps its own registries), labelled with the shard: every series
// when full, else the process-wide ones.
func shardGatherer(n *Node, full bool) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		byName := map[string]*dto.MetricFamily{}
		var order []string
		for _, s := range n.shards {
			inst := s.inst.Load()
			if inst == nil || !inst.acquire() {
				continue
			}
			public, all := inst.srv.API.MetricsGatherers()
			g := public
			if full {
				g = all
			}
			families, err := g.Gather()
			inst.release()
			if err != nil {
				return nil, err
			}
			label := &dto.LabelPair{Name: proto.String("shard"), Value: proto.String(shardName(s.k))}
			for _, f := range families {
				name := f.GetName()
				if serverOwn(name) {
					continue
				}
				for _, m := range f.Metric {
					m.Label = append(m.Label, label)
				}
				if have, ok := byName[name]; ok {
					have.Metric = append(have.Metric, f.Metric...)
				} else {
					byName[name] = f
					order = append(order, name)
				}
			}
		}
		out := make([]*dto.MetricFamily, 0, len(order))
		for _, name := range order {
			out = append(out, byName[name])
		}
		return out, nil
	})
}
