// Package grafana_test checks deploy/grafana/tether.json against a real
// Prometheus scraping a real server under load: every panel's query must
// return data.
package grafana_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/core"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/tenancy"
)

const (
	secret = "grafana-test-secret-0123456789abcdef"
	// metricsToken is the server's TETHER_METRICS_TOKENS, which Prometheus
	// sends: without it /metrics has no per-queue series.
	metricsToken = "grafana-test-metrics-token"
	tenantID     = "acme"
	queue        = "jobs"
	// scrapeInterval is Prometheus' scrape interval here, and rateWindow
	// what $__rate_interval becomes: four scrapes, as Grafana computes it.
	scrapeInterval = time.Second
	rateWindow     = "4s"
)

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Panels []struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
}

func TestDashboardQueriesReturnData(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (apt-get install prometheus): the dashboard's queries are not checked")
	}
	raw, err := os.ReadFile("tether.json")
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))

	addr := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	load(ctx, t, &wg, addr)
	promURL := startPrometheus(t, promBin, addr)

	type query struct{ panel, ref, expr string }
	var queries []query
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q target %s has no expr", p.Title, tg.RefID)
			queries = append(queries, query{p.Title, tg.RefID, substitute(tg.Expr)})
		}
	}
	require.NotEmpty(t, queries)
	// Every query must return data while the load runs; the histograms'
	// and rates' windows need a few scrapes first.
	deadline := time.Now().Add(90 * time.Second)
	answers := map[int]string{}
	for len(answers) < len(queries) {
		for i, q := range queries {
			if _, ok := answers[i]; ok {
				continue
			}
			if res := promQuery(t, promURL, q.expr); res != "" {
				answers[i] = res
			}
		}
		if len(answers) == len(queries) {
			break
		}
		if time.Now().After(deadline) {
			for i, q := range queries {
				if _, ok := answers[i]; !ok {
					t.Errorf("panel %q (%s): no data for %s", q.panel, q.ref, q.expr)
				}
			}
			t.FailNow()
		}
		time.Sleep(scrapeInterval) // Prometheus scrapes on its own clock; nothing to wait on but its next scrape
	}
	for i, q := range queries {
		t.Logf("panel %q %s\n    query:  %s\n    answer: %s", q.panel, q.ref, q.expr, answers[i])
	}
	require.Contains(t, promQuery(t, promURL, `up{job="tether"}`), "=1", "the scrape with the metrics token is accepted")
	checkRulesHealthy(t, promURL)
}

// checkRulesHealthy holds every rule of deploy/prometheus/alerts.yml, which
// the Prometheus here loads, to evaluating without error against the live
// server's series.
func checkRulesHealthy(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/api/v1/rules")
		require.NoError(t, err)
		var r struct {
			Data struct {
				Groups []struct {
					Rules []struct {
						Name      string `json:"name"`
						Health    string `json:"health"`
						LastError string `json:"lastError"`
					} `json:"rules"`
				} `json:"groups"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		require.NoError(t, err)
		n, ok := 0, true
		for _, g := range r.Data.Groups {
			for _, rule := range g.Rules {
				n++
				require.NotEqual(t, "err", rule.Health, "rule %s: %s", rule.Name, rule.LastError)
				ok = ok && rule.Health == "ok"
			}
		}
		require.NotZero(t, n, "the alerting rules are loaded")
		if ok {
			t.Logf("%d alerting rules evaluate without error", n)
			return
		}
		require.True(t, time.Now().Before(deadline), "the rules were not all evaluated within 30 s")
		time.Sleep(scrapeInterval) // Prometheus evaluates on its own clock
	}
}

// substitute replaces the Grafana variables with the values the load uses.
func substitute(expr string) string {
	return strings.NewReplacer("$__rate_interval", rateWindow, "$tenant", tenantID, "$queue", queue).Replace(expr)
}

// promQuery runs an instant query and returns its result (a short text of
// each series and value), "" when it is empty.
func promQuery(t *testing.T, base, expr string) string {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", expr, body)
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &r), string(body))
	require.Equal(t, "success", r.Status, string(body))
	var parts []string
	for _, s := range r.Data.Result {
		delete(s.Metric, "instance")
		delete(s.Metric, "job")
		v := any(nil)
		if len(s.Value) == 2 {
			v = s.Value[1]
		}
		parts = append(parts, fmt.Sprintf("%v=%v", s.Metric, v))
	}
	return strings.Join(parts, "; ")
}

// startServer runs a real server on a free port, with its store in a temp
// dir, and returns its address.
func startServer(t *testing.T) string {
	t.Helper()
	srv, err := server.Open(context.Background(), server.Config{
		Config: core.Config{
			DataDir:        t.TempDir(),
			ReaperInterval: 100 * time.Millisecond,
			Tenant: tenancy.Config{
				JWTSecrets:   []string{secret},
				TTLCeilingMS: 86400000,
				Defaults:     tenancy.Policy{ClaimTTLDefaultMS: 60000, ClaimTTLMaxMS: 7200000, MaxAttemptsDefault: 2},
			},
		},
		MetricsTokens: []string{metricsToken},
	})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
	})
	return ln.Addr().String()
}

// load creates nodes and works them until ctx ends: most complete, some
// fail, some are left to expire (and die after their two attempts).
func load(ctx context.Context, t *testing.T, wg *sync.WaitGroup, addr string) {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "loader", "tid": tenantID, "roles": []string{"dispatcher"}, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(secret))
	require.NoError(t, err)
	c, err := client.NewClientWithResponses("http://"+addr, client.WithBearerToken(tok))
	require.NoError(t, err)
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			_, _ = c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{Type: "task", Queue: ptr(queue)})
			sleep(ctx, 20*time.Millisecond)
		}
	})
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			ttl := int64(60000)
			if i%7 == 3 {
				ttl = 1000 // left to expire
			}
			res, err := c.ClaimNextWithResponse(ctx, queue, client.ClaimNextRequest{TTLMS: &ttl, WaitMS: ptr(int64(500))})
			if err != nil || res.JSON200 == nil {
				continue
			}
			id := res.JSON200.Node.ID
			sleep(ctx, time.Duration(10+i%5*10)*time.Millisecond)
			switch {
			case i%7 == 3:
			case i%5 == 2:
				_, _ = c.FailNodeWithResponse(ctx, id, client.FailRequest{Error: "load test failure", Requeue: ptr(i%2 == 0), RetryInMS: ptr(int64(0))})
			default:
				_, _ = c.CompleteNodeWithResponse(ctx, id, client.CompleteRequest{})
			}
		}
	})
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// startPrometheus runs Debian's prometheus on a free port with a temp
// config that scrapes target every scrapeInterval, and returns its URL once
// it is ready.
func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "metrics-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(metricsToken+"\n"), 0o600))
	rules, err := filepath.Abs("../prometheus/alerts.yml")
	require.NoError(t, err)
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\nrule_files: [%q]\n"+
		"scrape_configs:\n  - job_name: tether\n    authorization:\n      credentials_file: %q\n    static_configs:\n      - targets: [%q]\n",
		scrapeInterval, scrapeInterval, rules, tokenFile, target)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cmd := exec.Command(bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
	)
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		logFile.Close()
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("prometheus exited: %v\n%s", err, log)
		default:
		}
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		require.True(t, time.Now().Before(deadline), "prometheus was not ready within 30 s")
		time.Sleep(100 * time.Millisecond) // an external process: polling its readiness is all there is
	}
}

func ptr[T any](v T) *T { return &v }
