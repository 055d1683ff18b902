package ui_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestDashboardFlowControl shows flow control as the API reads it: each
// limit with what runs under it against the limit and its start rate, each
// budget with its spend this window, a queue's own flow settings, and the
// claims flow control held back, per queue, on the throughput view.
func TestDashboardFlowControl(t *testing.T) {
	ctx := browser(t)
	s := startSite(t)
	shots := os.Getenv("TETHER_UI_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	ops, alice := s.token("ops", "dispatcher"), s.token("alice", "worker")

	s.call(ops, "PUT", "/v1/limits/repo:*", map[string]any{"max_running": 1}, 200)
	s.call(ops, "PUT", "/v1/limits/provider:openai", map[string]any{"max_running": 4}, 200)
	// A start rate's bucket starts empty: one on a key no node here carries.
	s.call(ops, "PUT", "/v1/limits/provider:anthropic", map[string]any{"rate": map[string]any{"per_second": 2, "burst": 5}}, 200)
	s.call(ops, "PUT", "/v1/budgets/provider:openai", map[string]any{"usage": "tokens", "limit": 1000, "window_ms": 3600000}, 200)
	s.call(ops, "PATCH", "/v1/queues/fixes", map[string]any{"max_running_per_key": 2}, 200)
	for _, id := range []string{"fix-web", "lint-web"} {
		s.call(ops, "POST", "/v1/nodes", map[string]any{"id": id, "type": "fix", "queue": "fixes",
			"concurrency_keys": []string{"repo:acme/web", "provider:openai"}}, 201)
	}
	// fix-web runs and spends 250 tokens; lint-web is held back by repo:*,
	// twice.
	claim := s.call(alice, "POST", "/v1/queues/fixes/claim", map[string]any{}, 200)
	require.Equal(t, "fix-web", claim["node"].(map[string]any)["id"])
	fence := claim["lease"].(map[string]any)["fence"]
	s.call(alice, "POST", "/v1/nodes/fix-web/progress", map[string]any{"fence": fence, "usage": map[string]any{"tokens": 250}}, 200)
	for range 2 {
		s.call(alice, "POST", "/v1/queues/fixes/claim", map[string]any{}, 204)
	}

	step(t, ctx, "sign in",
		chromedp.Navigate(s.url+"/ui"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), ops),
		chromedp.Click(chromedp.CSS(`#signin button[type="submit"]`)),
		until(`!!document.querySelector('#limits tr[data-key="repo:*"]')`))

	const limitRow = `document.querySelector('#limits tr[data-key="%s"] %s')?.textContent`
	require.Equal(t, "1 / 1", eval[string](t, ctx, fmt.Sprintf(limitRow, "repo:*", ".running .num")), "running against the limit")
	require.True(t, eval[bool](t, ctx, `document.querySelector('#limits tr[data-key="repo:*"] .meter').classList.contains('full')`))
	require.Equal(t, "1 / 4", eval[string](t, ctx, fmt.Sprintf(limitRow, "provider:openai", ".running .num")))
	require.Equal(t, "—", eval[string](t, ctx, fmt.Sprintf(limitRow, "provider:openai", ".rate")))
	require.Equal(t, "2/s, burst 5", eval[string](t, ctx, fmt.Sprintf(limitRow, "provider:anthropic", ".rate")))

	const budgetRow = `document.querySelector('#budgets tr[data-budget="provider:openai"] %s')?.textContent`
	step(t, ctx, "the budget's spend", until(fmt.Sprintf(budgetRow, ".spent .num")+` === '250 / 1000'`))
	require.Contains(t, eval[string](t, ctx, fmt.Sprintf(budgetRow, "")), "tokens")
	require.Contains(t, eval[string](t, ctx, fmt.Sprintf(budgetRow, "")), "open")
	require.Equal(t, "2 per key",
		eval[string](t, ctx, `document.querySelector('#queues tr[data-queue="fixes"] .flow').textContent`))
	screenshot(t, ctx, shots, "flow-control.png")

	// The spend passes the budget: the page says it is exhausted.
	s.call(alice, "POST", "/v1/nodes/fix-web/progress", map[string]any{"fence": fence, "usage": map[string]any{"tokens": 800}}, 200)
	step(t, ctx, "an exhausted budget",
		until(fmt.Sprintf(budgetRow, ".badge")+` === 'exhausted'`),
		until(fmt.Sprintf(budgetRow, ".spent .num")+` === '1050 / 1000'`))

	// The throughput view counts the claims flow control held back.
	step(t, ctx, "throttled claims",
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/throughput'`),
		until(`document.querySelector('figure[data-queue="fixes"] [data-total="throttled"]')?.textContent === '2 throttled'`))
	screenshot(t, ctx, shots, "flow-throttled.png")
}
