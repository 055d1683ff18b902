package helm

import (
	"os"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The ServiceMonitor scrapes the API's port with the metrics token from the
// Secret, once per pod (the badger shape's headless Service is left out).
func TestServiceMonitorWithToken(t *testing.T) {
	t.Parallel()
	objs, err := render(t, map[string]any{
		"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}},
	})
	require.NoError(t, err)
	sms := find[*monitoringv1.ServiceMonitor](t, objs)
	require.Len(t, sms, 1)
	sm := sms[0]
	require.Equal(t, "prometheus", sm.Labels["release"])
	require.Len(t, sm.Spec.Endpoints, 1)
	ep := sm.Spec.Endpoints[0]
	require.Equal(t, "http", ep.Port)
	require.Equal(t, "/metrics", ep.Path)
	require.NotNil(t, ep.Authorization)
	require.Equal(t, "Bearer", ep.Authorization.Type)
	require.Equal(t, "tether", ep.Authorization.Credentials.Name)
	require.Equal(t, "metrics-token", ep.Authorization.Credentials.Key)

	services := find[*corev1.Service](t, objs)
	require.Len(t, services, 2)
	selected := 0
	for _, svc := range services {
		matches := true
		for k, v := range sm.Spec.Selector.MatchLabels {
			matches = matches && svc.Labels[k] == v
		}
		for _, e := range sm.Spec.Selector.MatchExpressions {
			require.Equal(t, "DoesNotExist", string(e.Operator))
			_, has := svc.Labels[e.Key]
			matches = matches && !has
		}
		if matches {
			selected++
			require.Equal(t, "tether", svc.Name)
		}
	}
	require.Equal(t, 1, selected, "one Service, so each pod is scraped once")
}

// With metrics.port the server serves every series on a listener of its own,
// and the ServiceMonitor scrapes that, without a token.
func TestMetricsListener(t *testing.T) {
	t.Parallel()
	objs, err := render(t, map[string]any{
		"store": "etcd", "etcd": map[string]any{"endpoints": []any{"http://etcd:2379"}},
		"metrics": map[string]any{"port": 9725, "serviceMonitor": map[string]any{"enabled": true}},
	})
	require.NoError(t, err)
	dep := find[*appsv1.Deployment](t, objs)
	require.Len(t, dep, 1)
	c := dep[0].Spec.Template.Spec.Containers[0]
	require.Equal(t, "0.0.0.0:9725", envOf(c)["TETHER_METRICS_ADDR"].Value)
	require.Contains(t, c.Ports, corev1.ContainerPort{Name: "metrics", ContainerPort: 9725, Protocol: corev1.ProtocolTCP})
	svc := find[*corev1.Service](t, objs)[0]
	require.Len(t, svc.Spec.Ports, 2)
	require.Equal(t, "metrics", svc.Spec.Ports[1].Name)
	sm := find[*monitoringv1.ServiceMonitor](t, objs)[0]
	require.Equal(t, "metrics", sm.Spec.Endpoints[0].Port)
	require.Nil(t, sm.Spec.Endpoints[0].Authorization, "the listener needs no token")

	for _, port := range []any{36725, 70000, -1} {
		_, err := render(t, map[string]any{"metrics": map[string]any{"port": port}})
		require.ErrorContains(t, err, "metrics.port must be a port from 1 to 65535 other than 36725")
	}
}

// The PrometheusRule carries deploy/prometheus/alerts.yml, rule for rule;
// the chart's copy is that file.
func TestPrometheusRule(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("../prometheus/alerts.yml")
	require.NoError(t, err)
	copied, err := os.ReadFile(chartDir + "/files/alerts.yml")
	require.NoError(t, err)
	require.Equal(t, string(want), string(copied), "the chart's copy is stale: cp deploy/prometheus/alerts.yml deploy/helm/tether/files/alerts.yml")

	objs, err := render(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}})
	require.NoError(t, err)
	rules := find[*monitoringv1.PrometheusRule](t, objs)
	require.Len(t, rules, 1)
	var file struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(want, &file))
	got := rules[0].Spec.Groups
	require.Len(t, got, len(file.Groups))
	alerts := 0
	for i, g := range file.Groups {
		require.Equal(t, g.Name, got[i].Name)
		require.Len(t, got[i].Rules, len(g.Rules))
		for j, r := range g.Rules {
			have := got[i].Rules[j]
			require.Equal(t, r.Alert, have.Alert)
			require.Equal(t, r.Expr, have.Expr.String())
			require.Equal(t, r.Labels, have.Labels)
			require.Equal(t, r.Annotations, have.Annotations, "annotations reach Prometheus untemplated by Helm")
			if r.For != "" {
				require.Equal(t, r.For, string(*have.For))
			}
			alerts++
		}
	}
	require.Equal(t, 9, alerts)
}
