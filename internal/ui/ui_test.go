package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/apitest"
	"github.com/tether-run/tether/internal/testserver"
	"github.com/tether-run/tether/internal/testskip"
)

// site is a real server on a free port with a real store in a temp dir, on
// the wall clock: the page counts leases down on it.
type site struct {
	t   *testing.T
	url string
	hc  *http.Client
	srv *testserver.Server
}

func startSite(t *testing.T) *site {
	t.Helper()
	s := testserver.Start(t, testserver.WallClock)
	hc := &http.Client{Transport: apitest.ValidatingTransport(t, nil), Timeout: 30 * time.Second}
	return &site{t: t, url: s.URL, hc: hc, srv: s}
}

func (s *site) token(sub string, roles ...string) string {
	s.t.Helper()
	return s.srv.Token("acme", sub, roles...)
}

// call sends a JSON request and decodes the answer, requiring status want.
// Every answer is validated against openapi.yaml.
func (s *site) call(tok, method, path string, body any, want int) map[string]any {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(s.t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.hc.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	require.Equal(s.t, want, resp.StatusCode, "%s %s: %s", method, path, b)
	var out map[string]any
	if len(b) > 0 {
		require.NoError(s.t, json.Unmarshal(b, &out))
	}
	return out
}

// paused answers, by queue, whether the API says it is paused.
func (s *site) paused(tok string) map[string]bool {
	s.t.Helper()
	out := map[string]bool{}
	for _, q := range s.call(tok, "GET", "/v1/queues", nil, 200)["items"].([]any) {
		q := q.(map[string]any)
		out[q["queue"].(string)] = q["paused"].(bool)
	}
	return out
}

// browser starts headless Chromium, or skips the test when there is none.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		testskip.Missing(t, "chromium", "not installed; Debian: apt-get install chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1440, 1000),
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser and must not carry a timeout.
	require.NoError(t, chromedp.Do(ctx))
	return ctx
}

// step runs actions with a deadline, so a missing element fails the test
// instead of hanging it.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		// Say what the page showed, so a failure can be read without a browser.
		shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash + '\n' + document.body.innerText`))
		t.Fatalf("%s: %v\nthe page showed:\n%s", what, err, shown)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	require.NoError(t, err, js)
	return v
}

// until polls a JavaScript predicate in the page (on every frame).
func until(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(10*time.Second))
}

// press clicks the element sel selects from inside the page, once it is
// there. The dashboard redraws its panels as events arrive, so an element
// the browser resolved for a click driven from outside (chromedp.Click) can
// be replaced before the click lands ("Could not find node with given id");
// a click in the page finds and clicks the element in one step.
func press(sel string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (!el) return false; el.click(); return true })()`, sel))
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot %s", p)
}

// left parses a countdown ("54.3s", "4m 59s", "1h 05m") into seconds.
func left(t *testing.T, v string) float64 {
	t.Helper()
	var total float64
	for f := range strings.FieldsSeq(v) {
		unit := map[byte]float64{'s': 1, 'm': 60, 'h': 3600}[f[len(f)-1]]
		n, err := strconv.ParseFloat(f[:len(f)-1], 64)
		require.NoError(t, err, "countdown %q", v)
		require.NotZero(t, unit, "countdown %q", v)
		total += n * unit
	}
	return total
}

func TestDashboard(t *testing.T) {
	ctx := browser(t)
	s := startSite(t)
	shots := os.Getenv("TETHER_UI_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))

	// Everything the page writes to the console: the test ends by requiring
	// no exception, no CSP violation and no error but the refusal it causes.
	var (
		mu      sync.Mutex
		console []chromedp.ConsoleMessage
	)
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, m)
			mu.Unlock()
		}
	}()

	ops := s.token("ops", "dispatcher")
	alice, bob := s.token("alice", "worker"), s.token("bob", "worker")

	// A release with two builds under it, an index waiting on the first
	// build, and a queue nobody has touched.
	s.call(ops, "POST", "/v1/nodes", map[string]any{"id": "release-7", "type": "release", "title": "Ship release 7"}, 201)
	s.call(ops, "POST", "/v1/nodes", map[string]any{"id": "build-linux", "type": "build", "title": "Build for Linux", "queue": "builds", "parent": "release-7", "labels": []string{"linux"}}, 201)
	s.call(ops, "POST", "/v1/nodes", map[string]any{"id": "build-mac", "type": "build", "title": "Build for macOS", "queue": "builds", "parent": "release-7"}, 201)
	s.call(ops, "POST", "/v1/nodes", map[string]any{"id": "build-win", "type": "build", "title": "Build for Windows", "queue": "builds", "parent": "release-7"}, 201)
	s.call(ops, "POST", "/v1/nodes", map[string]any{"id": "index-docs", "type": "index", "queue": "indexing", "depends_on": []string{"build-linux"}}, 201)
	s.call(ops, "POST", "/v1/nodes", map[string]any{"id": "index-site", "type": "index", "queue": "indexing"}, 201)

	// Live leases: alice's run was released once (a retired carrier), then
	// claimed again; bob holds a short lease that counts down in seconds.
	s.call(alice, "POST", "/v1/nodes/build-linux/claim", map[string]any{"session": "run-1"}, 200)
	s.call(alice, "POST", "/v1/nodes/build-linux/release", map[string]any{"reason": "restarting"}, 200)
	claimed := s.call(alice, "POST", "/v1/nodes/build-linux/claim", map[string]any{"session": "run-2", "ttl_ms": 600000}, 200)
	fence := claimed["lease"].(map[string]any)["fence"].(float64)
	s.call(bob, "POST", "/v1/nodes/build-mac/claim", map[string]any{"ttl_ms": 45000}, 200)
	s.call(alice, "POST", "/v1/nodes/build-linux/comments", map[string]any{"body": "Linker is slow on this runner; watching it."}, 201)
	s.call(alice, "POST", "/v1/workers/heartbeat", map[string]any{"worker": "alice-1", "status": "working", "node": "build-linux"}, 200)
	s.call(bob, "POST", "/v1/workers/heartbeat", map[string]any{"worker": "bob-1", "status": "idle"}, 200)
	// A runner that stopped cleanly: offline, in the API's word and the page's.
	s.call(bob, "POST", "/v1/workers/heartbeat", map[string]any{"worker": "bob-2", "status": "offline"}, 200)
	s.call(ops, "POST", "/v1/schedules", map[string]any{"id": "nightly-docs", "cron": "0 3 * * *", "timezone": "Europe/Paris", "template": map[string]any{"type": "index", "queue": "indexing"}}, 201)

	step(t, ctx, "open the page", chromedp.Navigate(s.url+"/ui"), chromedp.WaitVisible(chromedp.ID("token")))
	screenshot(t, ctx, shots, "signin.png")
	step(t, ctx, "sign in",
		chromedp.SendKeys(chromedp.ID("token"), ops),
		chromedp.Click(chromedp.CSS(`#signin button[type="submit"]`)),
		until(`document.querySelector('#leases tr[data-node="build-mac"] .countdown')?.textContent.endsWith('s')`),
	)
	// The token is in the tab's sessionStorage, never in the address.
	require.Equal(t, ops, eval[string](t, ctx, `sessionStorage.getItem('tether.token')`))
	require.NotContains(t, eval[string](t, ctx, `location.href`), ops)

	// The fence is the one the claim got; the countdowns move.
	require.Equal(t, strconv.Itoa(int(fence)), eval[string](t, ctx, `document.querySelector('#leases tr[data-node="build-linux"] .fence').textContent`))
	const cd = `document.querySelector('#leases tr[data-node="build-mac"] .countdown').textContent`
	first := left(t, eval[string](t, ctx, cd))
	time.Sleep(1500 * time.Millisecond) // a UI clock, not an expiry: it has to be seen moving
	second := left(t, eval[string](t, ctx, cd))
	require.Less(t, second, first, "the countdown moves")
	require.InDelta(t, 1.5, first-second, 1.0)
	require.Greater(t, first, 30.0, "45 s lease shows its time left")

	// A write made now shows up in the live event list.
	step(t, ctx, "the events panel is live", until(`document.querySelector('#stream')?.textContent === 'events live'`))
	s.call(ops, "POST", "/v1/nodes", map[string]any{"id": "hotfix-1", "type": "task", "queue": "builds", "title": "Hotfix"}, 201)
	step(t, ctx, "an SSE event appears",
		until(`[...document.querySelectorAll('#events li.ev.created a')].some(a => a.textContent === 'hotfix-1')`))

	// The tables follow the event: the new node is counted in its queue.
	step(t, ctx, "the queue counts follow", until(`document.querySelector('#queues tr[data-queue="builds"] td:nth-child(4)')?.textContent === '2'`))
	// Workers and schedules are there.
	require.Contains(t, eval[string](t, ctx, `document.querySelector('#workers').textContent`), "working")
	require.Equal(t, "offline", eval[string](t, ctx, `[...document.querySelectorAll('#workers tr')].find(r => r.textContent.includes('bob-2'))?.querySelector('.badge')?.textContent ?? ''`),
		"the page shows the API's state")
	require.Contains(t, eval[string](t, ctx, `document.querySelector('#schedules').textContent`), "nightly-docs")
	step(t, ctx, "a schedule's next fires",
		press(`#schedules button.link`),
		until(`document.querySelectorAll('#schedules tr.detail li').length === 5`))
	screenshot(t, ctx, shots, "overview.png")

	// Pause a queue from the page; the API says it is paused.
	step(t, ctx, "pause the builds queue",
		press(`#queues tr[data-queue="builds"] button.pause`),
		until(`!!document.querySelector('#queues tr[data-queue="builds"] button.resume')`))
	require.Equal(t, map[string]bool{"builds": true, "indexing": false}, s.paused(ops))
	screenshot(t, ctx, shots, "paused.png")

	// A node's page: its fields, neighbourhood, carriers and comments.
	step(t, ctx, "open build-linux",
		press(`#leases tr[data-node="build-linux"] a`),
		until(`document.querySelectorAll('#subgraph svg rect').length >= 5`),
		until(`document.querySelectorAll('#carriers tbody tr').length === 2`),
		until(`document.querySelector('#comments li')?.textContent.includes('Linker is slow')`),
		until(`!!document.querySelector('#node .countdown')`))
	carriers := eval[string](t, ctx, `document.querySelector('#carriers').textContent`)
	require.Contains(t, carriers, "identity:alice")
	require.Contains(t, carriers, "released")
	screenshot(t, ctx, shots, "node.png")

	// Release, cancel and requeue a node from its page (the page asks
	// confirm() first: the test says yes). index-site stands alone, so the
	// cancel reaches no other node.
	s.call(bob, "POST", "/v1/nodes/index-site/claim", map[string]any{}, 200)
	nodeStatus := func(id string) string {
		return s.call(ops, "GET", "/v1/nodes/"+id, nil, 200)["status"].(string)
	}
	const shows = `document.querySelector('#node h2')?.textContent === 'index-site' && document.querySelector('#node .badge')?.textContent === `
	const action = `#node button[data-action="%s"]`
	step(t, ctx, "release index-site's lease",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true; location.hash = '#/node/index-site'`),
		until(shows+`'running'`),
		press(fmt.Sprintf(action, "Release lease")),
		until(shows+`'queued'`))
	require.Equal(t, "queued", nodeStatus("index-site"))
	step(t, ctx, "cancel index-site",
		press(fmt.Sprintf(action, "Cancel")),
		until(shows+`'cancelled'`))
	require.Equal(t, "cancelled", nodeStatus("index-site"))
	step(t, ctx, "requeue index-site",
		press(fmt.Sprintf(action, "Requeue")),
		until(shows+`'queued'`))
	require.Equal(t, "queued", nodeStatus("index-site"))
	screenshot(t, ctx, shots, "node-requeued.png")
	carriers = eval[string](t, ctx, `document.querySelector('#carriers').textContent`)
	require.Contains(t, carriers, "identity:bob")
	require.Contains(t, carriers, "taken_over", "a dispatcher's release of bob's lease ends his edge so")

	// A reader's API key may look but not act: the refusal's detail is shown.
	root := s.token("root", "admin")
	key := s.call(root, "POST", "/v1/tokens", map[string]any{"sub": "viewer", "roles": []string{"reader"}, "name": "dashboard"}, 201)
	step(t, ctx, "sign in as a reader",
		chromedp.Click(chromedp.ID("signout")),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), key["token"].(string)),
		chromedp.Click(chromedp.CSS(`#signin button[type="submit"]`)),
		chromedp.Click(chromedp.CSS(`header .brand`)),
		until(`!!document.querySelector('#queues tr[data-queue="builds"] button.resume')`),
		press(`#queues tr[data-queue="builds"] button.resume`),
		until(`!document.querySelector('#problem').hidden`))
	problem := eval[string](t, ctx, `document.querySelector('#problem').textContent`)
	// The events of the last sign-in were forgotten, then read again once.
	step(t, ctx, "the reader's events are listed", until(`[...document.querySelectorAll('#events .seq')].some(e => e.textContent === '#1')`))
	seqs := eval[[]string](t, ctx, `[...document.querySelectorAll('#events .seq')].map(e => e.textContent)`)
	require.Len(t, seqs, len(slices.Compact(slices.Sorted(slices.Values(seqs)))), "no event twice: %v", seqs)
	require.Contains(t, problem, "Resume builds: 403 forbidden")
	require.Contains(t, problem, "needs the dispatcher role")
	screenshot(t, ctx, shots, "refused.png")
	require.Equal(t, map[string]bool{"builds": true, "indexing": false}, s.paused(ops), "the refused resume changed nothing")

	// A revoked key sends the operator back to sign in, saying why.
	mu.Lock()
	revoked := len(console) // only later messages may be the key's 401s
	mu.Unlock()
	s.call(root, "DELETE", "/v1/tokens/"+key["id"].(string), nil, 204)
	step(t, ctx, "a revoked key signs the page out",
		until(`document.querySelector('#signin .error')?.textContent.startsWith('401')`))
	require.Empty(t, eval[string](t, ctx, `sessionStorage.getItem('tether.token') ?? ''`))

	mu.Lock()
	defer mu.Unlock()
	for i, m := range console {
		refusal := m.Source == "network" &&
			(strings.Contains(m.Text, "status of 403") || i >= revoked && strings.Contains(m.Text, "status of 401"))
		require.False(t, m.IsException() || m.Source == "security" || (m.Type == chromedp.ConsoleError && !refusal), "the page said %s (%s %s)", m, m.Source, m.URL)
	}
}

// TestDashboardFiles checks how the files are served, without a browser.
func TestDashboardFiles(t *testing.T) {
	t.Parallel()
	s := startSite(t)
	noRedirect := &http.Client{
		Transport:     s.hc.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := noRedirect.Get(s.url + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}

	resp, _ := get("/ui/")
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, "/ui", resp.Header.Get("Location"))

	for path, typ := range map[string]string{"/ui": "text/html", "/ui/app.js": "text/javascript", "/ui/style.css": "text/css"} {
		resp, body := get(path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), typ), "%s: %s", path, resp.Header.Get("Content-Type"))
		require.NotEmpty(t, body, path)
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "default-src 'none'", path)
		require.Contains(t, csp, "script-src 'self'", path)
		require.Contains(t, csp, "frame-ancestors 'none'", path)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
		require.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"), path)
	}

	for _, path := range []string{"/ui/nope.js", "/ui/static/app.js", "/ui/..%2fui.go"} {
		resp, body := get(path)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), path)
		require.Contains(t, body, `"code":"not_found"`, path)
	}
}
