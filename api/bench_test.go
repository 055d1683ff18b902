package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/server"
)

// The request benchmarks serve requests through the real server's Echo
// handler (every middleware: request id, access log, metrics, auth, rate
// limit, roles) over a real Badger store in b.TempDir(), in process, so that
// allocs/op counts the server's allocations and not an HTTP client's. The
// requests are built before the timer starts.

// replayBody is a request body that can be read again after rewind, so one
// request can be served many times without allocating in the loop.
type replayBody struct {
	b   []byte
	off int
}

func (r *replayBody) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

func (r *replayBody) Close() error { return nil }

// sink is a reusable http.ResponseWriter that keeps the last answer.
type sink struct {
	h      http.Header
	status int
	body   []byte
}

func (w *sink) Header() http.Header { return w.h }

func (w *sink) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *sink) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

func (w *sink) reset() {
	clear(w.h)
	w.status = 0
	w.body = w.body[:0]
}

type benchEnv struct {
	*env
	b       *testing.B
	h       http.Handler
	w       *sink
	worker  string // JWT of w1 (worker) in tenant acme
	creator string // JWT of head (dispatcher) in tenant acme
}

func startBench(b *testing.B, opts ...option) *benchEnv {
	b.Helper()
	e := start(b, opts...)
	be := &benchEnv{
		env: e, b: b, h: e.srv.API.Handler(), w: &sink{h: http.Header{}},
		worker: e.token("acme", "w1", "worker"), creator: e.token("acme", "head", "dispatcher"),
	}
	// Bring tenant acme into being outside the measurement.
	be.serve(be.request(http.MethodGet, "/v1/tenant", be.worker, ""), http.StatusOK)
	return be
}

// request builds a request with tok and an optional JSON body.
func (be *benchEnv) request(method, path, tok, body string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	if body != "" {
		r.Body = &replayBody{b: []byte(body)}
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}

// serve answers r and fails the benchmark unless the status is want.
func (be *benchEnv) serve(r *http.Request, want int) {
	if rb, ok := r.Body.(*replayBody); ok {
		rb.off = 0
	}
	be.w.reset()
	be.h.ServeHTTP(be.w, r)
	if be.w.status != want {
		be.b.Fatalf("%s %s: %d, want %d: %s", r.Method, r.URL.Path, be.w.status, want, be.w.body)
	}
}

// queued creates n queued nodes named <prefix>-<i> in queue q.
func (be *benchEnv) queued(prefix, q string, n int) []string {
	return be.queuedNamed(q, n, func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) })
}

// queuedNamed creates n queued nodes named name(i) in queue q, in batches
// made in order.
func (be *benchEnv) queuedNamed(q string, n int, name func(i int) string) []string {
	ctx := context.Background()
	ids := make([]string, 0, n)
	for i := 0; i < n; i += nodes.MaxBatch {
		specs := make([]nodes.NodeSpec, 0, nodes.MaxBatch)
		for j := i; j < min(n, i+nodes.MaxBatch); j++ {
			id := name(j)
			specs = append(specs, nodes.NodeSpec{ID: ptr(id), Type: "task", Queue: ptr(q)})
			ids = append(ids, id)
		}
		_, err := be.srv.Nodes.CreateBatch(ctx, nodes.Caller{Tenant: "acme", Sub: "head", Dispatcher: true}, specs, "items", nil)
		require.NoError(be.b, err)
	}
	return ids
}

// claimed creates n nodes in queue q and claims them all as w1; it returns
// each node's id and fence.
func (be *benchEnv) claimed(prefix, q string, n int) (ids []string, fences []uint64) {
	be.queued(prefix, q, n)
	ctx := context.Background()
	for len(ids) < n {
		got, err := be.srv.Nodes.ClaimNext(ctx, nodes.ClaimNextParams{
			Caller: nodes.Caller{Tenant: "acme", Sub: "w1"}, Queue: q, Max: min(1000, n-len(ids)),
		})
		require.NoError(be.b, err)
		require.NotEmpty(be.b, got)
		for _, r := range got {
			ids = append(ids, r.Node.ID)
			fences = append(fences, r.Lease.Fence)
		}
	}
	return ids, fences
}

func BenchmarkRequestHealth(b *testing.B) {
	be := startBench(b)
	r := be.request(http.MethodGet, "/health", "", "")
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		be.serve(r, http.StatusOK)
	}
}

func BenchmarkRequestGetNode(b *testing.B) {
	be := startBench(b)
	be.queued("get", "default", 1)
	r := be.request(http.MethodGet, "/v1/nodes/get-0", be.worker, "")
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		be.serve(r, http.StatusOK)
	}
}

// BenchmarkRequestListEvents: a page of 100 events (the creations of 100
// nodes), as a poller of GET /v1/events reads it.
func BenchmarkRequestListEvents(b *testing.B) {
	be := startBench(b)
	be.queued("ev", "default", 100)
	r := be.request(http.MethodGet, "/v1/events?after=0&limit=100", be.worker, "")
	be.measure(b, func(int) *http.Request { return r })
}

func BenchmarkRequestCreateNode(b *testing.B) {
	be := startBench(b)
	r := be.request(http.MethodPost, "/v1/nodes", be.creator, `{"type":"task","queue":"default","title":"a task"}`)
	b.ReportAllocs()
	for b.Loop() {
		be.serve(r, http.StatusCreated)
	}
}

func BenchmarkRequestClaim(b *testing.B) {
	be := startBench(b)
	ids := be.queued("claim", "default", b.N)
	reqs := make([]*http.Request, b.N)
	for i, id := range ids {
		reqs[i] = be.request(http.MethodPost, "/v1/nodes/"+id+"/claim", be.worker, `{"ttl_ms":60000}`)
	}
	be.measure(b, func(i int) *http.Request { return reqs[i] })
}

func BenchmarkRequestRenew(b *testing.B) {
	be := startBench(b)
	ids, fences := be.claimed("renew", "default", 1)
	r := be.request(http.MethodPost, "/v1/nodes/"+ids[0]+"/renew", be.worker, fmt.Sprintf(`{"fence":%d}`, fences[0]))
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		be.serve(r, http.StatusOK)
	}
}

func BenchmarkRequestComplete(b *testing.B) {
	be := startBench(b)
	ids, fences := be.claimed("complete", "default", b.N)
	reqs := make([]*http.Request, b.N)
	for i, id := range ids {
		reqs[i] = be.request(http.MethodPost, "/v1/nodes/"+id+"/complete", be.worker, fmt.Sprintf(`{"fence":%d,"result":{"ok":true}}`, fences[i]))
	}
	be.measure(b, func(i int) *http.Request { return reqs[i] })
}

func BenchmarkRequestClaimNext(b *testing.B) {
	be := startBench(b)
	be.queued("next", "jobs", b.N)
	r := be.request(http.MethodPost, "/v1/queues/jobs/claim", be.worker, `{"ttl_ms":60000}`)
	be.measure(b, func(int) *http.Request { return r })
}

// BenchmarkRequestCompleteNext is a complete that claims the next node of
// the queue in the same request (complete with next): one op is one job.
func BenchmarkRequestCompleteNext(b *testing.B) {
	be := startBench(b)
	// Ids that sort as they were made, so the claim order is known.
	ids := be.queuedNamed("jobs", b.N+1, func(i int) string { return fmt.Sprintf("cn-%09d", i) })
	first, err := be.srv.Nodes.ClaimNext(context.Background(), nodes.ClaimNextParams{Caller: nodes.Caller{Tenant: "acme", Sub: "w1"}, Queue: "jobs"})
	require.NoError(b, err)
	require.Equal(b, ids[0], first[0].Node.ID)
	reqs := make([]*http.Request, b.N)
	for i := range reqs {
		reqs[i] = be.request(http.MethodPost, "/v1/nodes/"+ids[i]+"/complete", be.worker, `{"result":{"ok":true},"next":{"queue":"jobs","ttl_ms":60000}}`)
	}
	be.measure(b, func(i int) *http.Request { return reqs[i] })
	b.StopTimer()
	require.Contains(b, string(be.w.body), `"next":{"ok":true`, "the last complete claimed the next node")
}

// BenchmarkRequestNotFound is an error answer: a problem document.
func BenchmarkRequestNotFound(b *testing.B) {
	be := startBench(b)
	r := be.request(http.MethodGet, "/v1/nodes/missing", be.worker, "")
	b.ReportAllocs()
	for b.Loop() {
		be.serve(r, http.StatusNotFound)
	}
}

// BenchmarkAccessLog is the cost of the access log: authenticated GETs of
// one node from every core, each setting logging as a production server
// does (text lines to a file), with the requests served per second and the
// bytes logged per request.
func BenchmarkAccessLog(b *testing.B) {
	for _, setting := range []string{"off", "errors", "sample:100", "all"} {
		b.Run(setting, func(b *testing.B) {
			a, err := api.ParseAccessLog(setting)
			require.NoError(b, err)
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			require.NoError(b, err)
			defer f.Close()
			be := startBench(b, func(c *server.Config) {
				c.Logger = slog.New(slog.NewTextHandler(f, nil))
				c.AccessLog = a
			})
			be.queued("get", "default", 1)
			st, err := f.Stat()
			require.NoError(b, err)
			before := st.Size()
			b.ReportAllocs()
			b.ResetTimer()
			began := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				r := be.request(http.MethodGet, "/v1/nodes/get-0", be.worker, "")
				w := &sink{h: http.Header{}}
				for pb.Next() {
					w.reset()
					be.h.ServeHTTP(w, r)
					if w.status != http.StatusOK {
						b.Errorf("status %d: %s", w.status, w.body)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "req/s")
			st, err = f.Stat()
			require.NoError(b, err)
			b.ReportMetric(float64(st.Size()-before)/float64(b.N), "logB/req")
		})
	}
}

// BenchmarkRequestClaims100 is POST /v1/queues/{queue}/claims with max 100,
// as scenario (b) sends it; an op is one request of 100 claims.
func BenchmarkRequestClaims100(b *testing.B) {
	be := startBench(b)
	be.queued("claims", "jobs", 100*b.N)
	r := be.request(http.MethodPost, "/v1/queues/jobs/claims", be.worker, `{"max":100,"wait_ms":0}`)
	be.measure(b, func(int) *http.Request { return r })
}

// BenchmarkRequestBatchComplete100 is POST /v1/batch completing 100 claimed
// nodes, as scenario (b) sends it; an op is one request of 100 completes.
func BenchmarkRequestBatchComplete100(b *testing.B) {
	be := startBench(b)
	ids, fences := be.claimed("batch", "default", 100*b.N)
	reqs := make([]*http.Request, b.N)
	for i := range reqs {
		body := []byte(`{"ops":[`)
		for j := 0; j < 100; j++ {
			if j > 0 {
				body = append(body, ',')
			}
			k := 100*i + j
			body = fmt.Appendf(body, `{"op":"complete","id":%q,"fence":%d}`, ids[k], fences[k])
		}
		body = append(body, "]}"...)
		reqs[i] = be.request(http.MethodPost, "/v1/batch", be.worker, string(body))
	}
	be.measure(b, func(i int) *http.Request { return reqs[i] })
}

// BenchmarkRequestBatchRenew100 is POST /v1/batch renewing 100 held
// leases, a worker's heartbeat of all it holds: the ops that run one
// goroutine per node. An op is one request of 100 renews.
func BenchmarkRequestBatchRenew100(b *testing.B) {
	be := startBench(b)
	ids, fences := be.claimed("renews", "default", 100)
	body := []byte(`{"ops":[`)
	for j := range ids {
		if j > 0 {
			body = append(body, ',')
		}
		body = fmt.Appendf(body, `{"op":"renew","id":%q,"fence":%d}`, ids[j], fences[j])
	}
	r := be.request(http.MethodPost, "/v1/batch", be.worker, string(append(body, "]}"...)))
	be.measure(b, func(int) *http.Request { return r })
}

// measure serves op(i) for each of the b.N ops, expecting 200, and counts
// only that loop: the timer, the allocations (with their profile's base,
// allocsBase) and the CPU per op.
func (be *benchEnv) measure(b *testing.B, op func(i int) *http.Request) {
	b.ReportAllocs()
	b.ResetTimer()
	allocsBase(b)
	defer cpuPerOp(b)()
	for i := 0; i < b.N; i++ {
		be.serve(op(i), http.StatusOK)
	}
}

// allocsBase writes the allocation profile so far to the file
// TETHER_BENCH_ALLOCS_BASE names, when set: with -memprofile (and
// -memprofilerate 1) it is the base for pprof -diff_base, so that the
// difference holds the measured loop's allocations without the setup's.
func allocsBase(b *testing.B) {
	path := os.Getenv("TETHER_BENCH_ALLOCS_BASE")
	if path == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(path)
	require.NoError(b, err)
	defer f.Close()
	require.NoError(b, pprof.Lookup("allocs").WriteTo(f, 0))
}

// cpuPerOp starts counting the process's CPU time (user and system, every
// goroutine: the writer's and the store's too); the function it returns
// reports it per op as cpu-ns/op. Unlike ns/op, which is mostly waiting for
// fsync, it is the work a request costs.
func cpuPerOp(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
	}
}
