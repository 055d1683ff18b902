package ui_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestDashboardFindsAndFixesWork drives the views an operator uses to find
// work and fix it in bulk: a filtered node list with its last errors, a bulk
// requeue of 50 dead nodes confirmed with their count, a node's page with
// every attempt's error, its props and its timeline, the queues' throughput
// over the last hour (throttled claims among its series), and the page at
// 420 px.
func TestDashboardFindsAndFixesWork(t *testing.T) {
	ctx := browser(t)
	s := startSite(t)
	shots := os.Getenv("TETHER_UI_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	ops, alice := s.token("ops", "dispatcher"), s.token("alice", "worker")

	// 50 imports that died on their one attempt, and 3 that are fine.
	for i := range 50 {
		id := fmt.Sprintf("import-%02d", i)
		s.call(ops, "POST", "/v1/nodes", map[string]any{"id": id, "type": "import", "queue": "imports", "max_attempts": 1,
			"title": fmt.Sprintf("Import customer file %02d", i), "labels": []string{"csv"}}, 201)
		s.call(alice, "POST", "/v1/nodes/"+id+"/claim", map[string]any{}, 200)
		s.call(alice, "POST", "/v1/nodes/"+id+"/fail", map[string]any{"error": fmt.Sprintf("row %d: unterminated quote", i*7)}, 200)
	}
	for i := range 3 {
		s.call(ops, "POST", "/v1/nodes", map[string]any{"id": fmt.Sprintf("fresh-%d", i), "type": "import", "queue": "imports"}, 201)
	}
	// A node that failed three times, each with its own error.
	s.call(ops, "POST", "/v1/nodes", map[string]any{"id": "sync-crm", "type": "sync", "queue": "sync", "max_attempts": 3,
		"title": "Sync the CRM", "props": map[string]any{"account": "acme-eu", "batch": 12}}, 201)
	errs := []string{"connect: connection refused", "HTTP 502 from crm.example", "token expired while paging"}
	for _, e := range errs {
		s.call(alice, "POST", "/v1/nodes/sync-crm/claim", map[string]any{}, 200)
		s.call(alice, "POST", "/v1/nodes/sync-crm/fail", map[string]any{"error": e, "retry_in_ms": 0}, 200)
	}

	step(t, ctx, "sign in",
		chromedp.Navigate(s.url+"/ui"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), ops),
		chromedp.Click(chromedp.CSS(`#signin button[type="submit"]`)),
		until(`!!document.querySelector('#queues tr[data-queue="imports"]')`))

	// The queue's dead count is a link to the list of its dead nodes.
	step(t, ctx, "open the dead imports from the queue table",
		press(`#queues tr[data-queue="imports"] a[href*="status=dead"]`),
		until(`document.querySelectorAll('#list tbody tr').length === 50`))
	require.Equal(t, "#/nodes?queue=imports&status=dead", eval[string](t, ctx, `location.hash`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector('#list tr[data-node="import-07"]').textContent`), "row 49: unterminated quote")

	// A search narrows it; paging walks the server's cursor.
	step(t, ctx, "search the list",
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/nodes?queue=imports&status=dead&q=file%201'`),
		until(`document.querySelectorAll('#list tbody tr').length === 10`))
	screenshot(t, ctx, shots, "list-filtered.png")
	step(t, ctx, "page through every import",
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/nodes?queue=imports'`),
		until(`document.querySelectorAll('#list tbody tr').length === 50`),
		press(`#list .pager button:last-child`),
		until(`document.querySelectorAll('#list tbody tr').length === 3 && document.querySelector('#list .pager').textContent.includes('page 2')`))

	// Requeue every dead import: the dialog names the count first.
	step(t, ctx, "bulk requeue asks with the count",
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/nodes?queue=imports&status=dead'`),
		until(`document.querySelectorAll('#list tbody tr').length === 50`),
		press(`#list button[data-bulk="requeue"]`),
		until(`document.querySelector('dialog#confirm h2')?.textContent === 'Requeue 50 nodes?'`))
	screenshot(t, ctx, shots, "bulk-requeue-confirm.png")
	// Two more die while the dialog is open: the filter now selects 52, but
	// the operator confirmed 50, and only those 50 are requeued.
	for i := range 2 {
		id := fmt.Sprintf("late-%d", i)
		s.call(ops, "POST", "/v1/nodes", map[string]any{"id": id, "type": "import", "queue": "imports", "max_attempts": 1}, 201)
		s.call(alice, "POST", "/v1/nodes/"+id+"/claim", map[string]any{}, 200)
		s.call(alice, "POST", "/v1/nodes/"+id+"/fail", map[string]any{"error": "late"}, 200)
	}
	step(t, ctx, "bulk requeue",
		press(`dialog#confirm button[data-answer="yes"]`),
		until(`document.querySelector('#list p.note')?.textContent === 'requeue: 50 changed'`),
		until(`document.querySelectorAll('#list tbody tr').length === 2`))
	queued := s.call(ops, "GET", "/v1/nodes?queue=imports&status=queued&limit=1000", nil, 200)["items"].([]any)
	require.Len(t, queued, 53)
	dead := s.call(ops, "GET", "/v1/nodes?queue=imports&status=dead&limit=1000", nil, 200)["items"].([]any)
	require.Len(t, dead, 2, "the nodes that died after the confirmation are left alone")
	screenshot(t, ctx, shots, "bulk-requeued.png")

	// The node that failed three times shows each attempt's error, its props
	// and its timeline.
	step(t, ctx, "a node's attempts",
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/node/sync-crm'`),
		until(`document.querySelectorAll('#attempts tbody tr').length === 3`),
		until(`document.querySelectorAll('#timeline li').length >= 7`),
		until(`document.querySelector('#attempts tbody tr:last-child').textContent.includes('dead: no attempts left')`))
	attempts := eval[string](t, ctx, `document.querySelector('#attempts').textContent`)
	for _, e := range errs {
		require.Contains(t, attempts, e)
	}
	require.Contains(t, eval[string](t, ctx, `document.querySelector('#node pre.json').textContent`), `"account": "acme-eu"`)
	// Nothing on the page is wider than the window at 1440 px.
	require.LessOrEqual(t, eval[float64](t, ctx, `document.documentElement.scrollWidth`), eval[float64](t, ctx, `window.innerWidth`))
	screenshot(t, ctx, shots, "node-attempts.png")

	// The throughput view draws each queue's last hour from what the server
	// counted: 55 imports created (two late), 52 failed; the sync node's three failures.
	step(t, ctx, "the throughput view",
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/throughput'`),
		until(`document.querySelector('figure[data-queue="imports"] [data-total="created"]')?.textContent === '55 created'`),
		until(`document.querySelector('figure[data-queue="imports"] [data-total="failed"]')?.textContent === '52 failed'`),
		until(`document.querySelector('figure[data-queue="sync"] [data-total="failed"]')?.textContent === '3 failed'`),
		until(`document.querySelectorAll('figure[data-queue="imports"] polyline').length === 4`))
	screenshot(t, ctx, shots, "throughput.png")

	// At 420 px the header wraps and "Sign out" stays on screen.
	step(t, ctx, "a narrow window",
		chromedp.EmulateViewport(420, 900),
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/'`),
		until(`!!document.querySelector('#queues tr[data-queue="imports"]')`))
	right := eval[float64](t, ctx, `document.getElementById('signout').getBoundingClientRect().right`)
	require.LessOrEqual(t, right, 420.0, "Sign out is on screen")
	require.LessOrEqual(t, eval[float64](t, ctx, `document.querySelector('header').scrollWidth`), 420.0)
	screenshot(t, ctx, shots, "narrow.png")
}
