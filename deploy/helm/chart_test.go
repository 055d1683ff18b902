// Package helm tests the Tether chart in tether/ as helm lint and helm
// template would (with Helm's own lint and engine packages), and decodes
// every rendered object strictly into the Kubernetes API types: an unknown
// or misplaced field fails. It is a Go module of its own so that Helm and
// the Kubernetes types stay out of Tether's go.mod; .ci/run runs it.
package helm

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

const chartDir = "tether"

// The runner's default --grace and the server's drain on SIGTERM: a pod must
// be given longer than both before the kubelet's SIGKILL.
const drainSeconds = 30

// The shapes the chart has, as a user would set them.
var (
	badgerValues = map[string]any{}
	etcdValues   = map[string]any{
		"store":        "etcd",
		"replicaCount": 3,
		"etcd":         map[string]any{"endpoints": []any{"http://etcd-0.etcd:2379", "http://etcd-1.etcd:2379"}},
	}
	postgresValues = map[string]any{
		"store":        "postgres",
		"replicaCount": 3,
		"postgres":     map[string]any{"existingSecret": "tether-postgres"},
	}
)

func TestLint(t *testing.T) {
	t.Parallel()
	metricsValues := map[string]any{"metrics": map[string]any{
		"port": 9725, "serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true},
	}}
	for name, vals := range map[string]map[string]any{"badger": badgerValues, "etcd": etcdValues, "postgres": postgresValues, "metrics": metricsValues} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := lint.AllWithKubeVersion(chartDir, vals, "tether", nil)
			var bad []string
			for _, m := range res.Messages {
				t.Log(m.Error())
				if m.Severity >= support.WarningSev {
					bad = append(bad, m.Error())
				}
			}
			require.Empty(t, bad, "helm lint")
		})
	}
}

// rendered is one object of the chart's output.
type rendered struct {
	file string
	obj  runtime.Object
}

// render runs helm template on the chart with vals and decodes every
// object strictly.
func render(t *testing.T, vals map[string]any) ([]rendered, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	require.NoError(t, err)
	opts := chartutil.ReleaseOptions{Name: "tether", Namespace: "work", Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValues(chrt, vals, opts, chartutil.DefaultCapabilities)
	require.NoError(t, err)
	files, err := engine.Render(chrt, top)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, monitoringv1.AddToScheme} {
		require.NoError(t, add(scheme))
	}
	strict := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []rendered
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for doc := range strings.SplitSeq(files[name], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			if testing.Verbose() {
				t.Logf("# %s\n%s", name, doc)
			}
			obj, _, err := strict.Decode([]byte(doc), nil, nil)
			require.NoError(t, err, "%s does not decode strictly into the Kubernetes types:\n%s", name, doc)
			out = append(out, rendered{name, obj})
		}
	}
	return out, nil
}

var commentLine = regexp.MustCompile(`(?m)^\s*#.*$`)

func stripComments(doc string) string { return commentLine.ReplaceAllString(doc, "") }

func find[T runtime.Object](t *testing.T, objs []rendered) []T {
	t.Helper()
	var out []T
	for _, r := range objs {
		if o, ok := r.obj.(T); ok {
			out = append(out, o)
		}
	}
	return out
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

// checkPod holds what both shapes share: probes on /ready and /health, a
// grace longer than the drain, non-root with a read-only root, and the
// credentials from the Secret.
func checkPod(t *testing.T, spec corev1.PodSpec, secret string) corev1.Container {
	t.Helper()
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	require.Equal(t, "/ready", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "/health", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "/health", c.StartupProbe.HTTPGet.Path)
	require.Greater(t, *spec.TerminationGracePeriodSeconds, int64(drainSeconds))
	require.True(t, *spec.SecurityContext.RunAsNonRoot)
	require.Equal(t, int64(65532), *spec.SecurityContext.RunAsUser)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	env := envOf(c)
	require.Equal(t, secret, env["TETHER_JWT_SECRET"].ValueFrom.SecretKeyRef.Name)
	require.Equal(t, secret, env["TETHER_OPERATOR_TOKENS"].ValueFrom.SecretKeyRef.Name)
	require.Equal(t, secret, env["TETHER_METRICS_TOKENS"].ValueFrom.SecretKeyRef.Name)
	require.Equal(t, "0.0.0.0:36725", env["TETHER_ADDR"].Value)
	return c
}

func TestTemplateBadger(t *testing.T) {
	t.Parallel()
	objs, err := render(t, badgerValues)
	require.NoError(t, err)
	require.Empty(t, find[*appsv1.Deployment](t, objs))
	require.Empty(t, find[*policyv1.PodDisruptionBudget](t, objs))
	sets := find[*appsv1.StatefulSet](t, objs)
	require.Len(t, sets, 1)
	ss := sets[0]
	require.Equal(t, int32(1), *ss.Spec.Replicas, "one process owns a Badger directory")
	require.Len(t, ss.Spec.VolumeClaimTemplates, 1)
	require.Equal(t, "data", ss.Spec.VolumeClaimTemplates[0].Name)
	require.Equal(t, "10Gi", ss.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String())
	c := checkPod(t, ss.Spec.Template.Spec, "tether")
	require.Equal(t, "/data", envOf(c)["TETHER_DATA_DIR"].Value)
	require.NotContains(t, envOf(c), "TETHER_STORE")
	require.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
	require.Equal(t, int64(65532), *ss.Spec.Template.Spec.SecurityContext.FSGroup, "the volume is the server's to write")

	secrets := find[*corev1.Secret](t, objs)
	require.Len(t, secrets, 1)
	require.Len(t, secrets[0].Data["jwt-secret"], 48, "a generated secret")
	require.Len(t, secrets[0].Data["metrics-token"], 48, "a generated metrics token")
	require.NotEqual(t, secrets[0].Data["jwt-secret"], secrets[0].Data["metrics-token"])
	require.Empty(t, find[*monitoringv1.ServiceMonitor](t, objs), "off by default: the CRD may not be installed")
	require.Empty(t, find[*monitoringv1.PrometheusRule](t, objs))
	require.NotContains(t, envOf(c), "TETHER_METRICS_ADDR", "no metrics listener by default")
	services := find[*corev1.Service](t, objs)
	require.Len(t, services, 2)
	require.Equal(t, ss.Spec.ServiceName, services[1].Name)
}

func TestTemplateEtcd(t *testing.T) {
	t.Parallel()
	objs, err := render(t, etcdValues)
	require.NoError(t, err)
	require.Empty(t, find[*appsv1.StatefulSet](t, objs))
	deps := find[*appsv1.Deployment](t, objs)
	require.Len(t, deps, 1)
	d := deps[0]
	require.Equal(t, int32(3), *d.Spec.Replicas)
	c := checkPod(t, d.Spec.Template.Spec, "tether")
	env := envOf(c)
	require.Equal(t, "etcd", env["TETHER_STORE"].Value)
	require.Equal(t, "http://etcd-0.etcd:2379,http://etcd-1.etcd:2379", env["TETHER_ETCD_ENDPOINTS"].Value)
	require.Equal(t, "http://$(POD_IP):36725", env["TETHER_ADVERTISE_URL"].Value, "each server is reached at its pod IP")
	require.Equal(t, "status.podIP", env["POD_IP"].ValueFrom.FieldRef.FieldPath)
	require.NotContains(t, env, "TETHER_DATA_DIR")
	for _, m := range c.VolumeMounts {
		require.NotEqual(t, "/data", m.MountPath, "the etcd shape keeps no data directory")
	}
	pdbs := find[*policyv1.PodDisruptionBudget](t, objs)
	require.Len(t, pdbs, 1)
	require.Equal(t, 1, pdbs[0].Spec.MaxUnavailable.IntValue())
	require.Len(t, find[*corev1.Service](t, objs), 1)
}

// The postgres shape: stateless servers like etcd's, the URL from the
// user's Secret, never in the chart's values.
func TestTemplatePostgres(t *testing.T) {
	t.Parallel()
	objs, err := render(t, postgresValues)
	require.NoError(t, err)
	require.Empty(t, find[*appsv1.StatefulSet](t, objs))
	deps := find[*appsv1.Deployment](t, objs)
	require.Len(t, deps, 1)
	d := deps[0]
	require.Equal(t, int32(3), *d.Spec.Replicas)
	c := checkPod(t, d.Spec.Template.Spec, "tether")
	env := envOf(c)
	require.Equal(t, "postgres", env["TETHER_STORE"].Value)
	require.Equal(t, "tether-postgres", env["TETHER_POSTGRES_URL"].ValueFrom.SecretKeyRef.Name)
	require.Equal(t, "url", env["TETHER_POSTGRES_URL"].ValueFrom.SecretKeyRef.Key)
	require.Equal(t, "tether", env["TETHER_POSTGRES_SCHEMA"].Value)
	require.Equal(t, "http://$(POD_IP):36725", env["TETHER_ADVERTISE_URL"].Value, "each server is reached at its pod IP")
	require.NotContains(t, env, "TETHER_DATA_DIR")
	require.NotContains(t, env, "TETHER_ETCD_ENDPOINTS")
	for _, m := range c.VolumeMounts {
		require.NotEqual(t, "/data", m.MountPath, "the postgres shape keeps no data directory")
	}
	require.Len(t, find[*policyv1.PodDisruptionBudget](t, objs), 1)
	require.Len(t, find[*corev1.Service](t, objs), 1)
}

// With auth.existingSecret the chart makes no Secret and every reference
// names the user's, with its keys.
func TestTemplateExistingSecret(t *testing.T) {
	t.Parallel()
	objs, err := render(t, map[string]any{
		"auth": map[string]any{"existingSecret": "my-tether", "jwtSecretKey": "jwt", "operatorTokensKey": "ops"},
		"etcd": map[string]any{"existingSecret": "my-etcd"},
	})
	require.NoError(t, err)
	require.Empty(t, find[*corev1.Secret](t, objs))
	ss := find[*appsv1.StatefulSet](t, objs)[0]
	env := envOf(checkPod(t, ss.Spec.Template.Spec, "my-tether"))
	require.Equal(t, "jwt", env["TETHER_JWT_SECRET"].ValueFrom.SecretKeyRef.Key)
	require.Equal(t, "ops", env["TETHER_OPERATOR_TOKENS"].ValueFrom.SecretKeyRef.Key)
	require.NotContains(t, env, "TETHER_ETCD_USERNAME", "etcd credentials only with store etcd")

	objs, err = render(t, map[string]any{"store": "etcd", "etcd": map[string]any{"endpoints": []any{"https://etcd:2379"}, "existingSecret": "my-etcd"}})
	require.NoError(t, err)
	env = envOf(find[*appsv1.Deployment](t, objs)[0].Spec.Template.Spec.Containers[0])
	require.Equal(t, "my-etcd", env["TETHER_ETCD_USERNAME"].ValueFrom.SecretKeyRef.Name)
	require.Equal(t, "password", env["TETHER_ETCD_PASSWORD"].ValueFrom.SecretKeyRef.Key)
}

// Values that cannot make a working server fail the render, saying what to set.
func TestTemplateRefusesBadValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"store": "etcd"}, "store etcd needs etcd.endpoints"},
		{map[string]any{"store": "mysql"}, `store must be badger, etcd or postgres, not "mysql"`},
		{map[string]any{"store": "postgres"}, "store postgres needs postgres.existingSecret"},
		{map[string]any{"terminationGracePeriodSeconds": 30}, "terminationGracePeriodSeconds must be above 30"},
		{map[string]any{"store": "etcd", "replicaCount": 0, "etcd": map[string]any{"endpoints": []any{"http://e:2379"}}}, "replicaCount must be at least 1"},
	} {
		t.Run(fmt.Sprint(tc.vals), func(t *testing.T) {
			_, err := render(t, tc.vals)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestMain(m *testing.M) {
	if _, err := os.Stat(chartDir + "/Chart.yaml"); err != nil {
		fmt.Fprintln(os.Stderr, "run from deploy/helm: the chart is not in ./tether")
		os.Exit(2)
	}
	os.Exit(m.Run())
}
