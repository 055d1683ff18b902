package cluster

import (
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// metrics are the server's own (the cluster's, the process's) and, with a
// label shard, those of every shard served here.
type metrics struct {
	forwarded prometheus.Counter
	handler   http.Handler
}

func newMetrics(n *Node) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_cluster_forwarded_requests_total", Help: "Requests passed on to the server that owns their tenant's shard.",
		}),
	}
	reg.MustRegister(m.forwarded,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tether_cluster_shards", Help: "The cluster's shard count."},
			func() float64 { return float64(n.cfg.Shards) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tether_cluster_shards_owned", Help: "Shards served by this server."},
			func() float64 { return float64(n.localCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tether_cluster_members", Help: "Live servers of the cluster, as this one sees them."},
			func() float64 { return float64(len(n.view().members)) }),
	)
	m.handler = promhttp.HandlerFor(prometheus.Gatherers{reg, prometheus.GathererFunc(n.gatherShards)}, promhttp.HandlerOpts{})
	return m
}

// gatherShards reads the metrics of every shard served here (each shard's
// server keeps its own registry) and labels them with the shard. The
// process-wide families (go_, process_, build info) are the server's own.
func (n *Node) gatherShards() ([]*dto.MetricFamily, error) {
	byName := map[string]*dto.MetricFamily{}
	var order []string
	for _, s := range n.shards {
		inst := s.inst.Load()
		if inst == nil || !inst.acquire() {
			continue
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", "text/plain")
		inst.srv.API.Handler().ServeHTTP(rec, req)
		inst.release()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(rec.Body)
		if err != nil {
			return nil, err
		}
		label := &dto.LabelPair{Name: proto.String("shard"), Value: proto.String(shardName(s.k))}
		for name, f := range families {
			if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || name == "tether_build_info" {
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
}
