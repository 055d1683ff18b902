// Package runner runs a worker: slots that each claim the next ready node of
// a queue from a Tether server, run a Handler for it while holding its lease,
// and report how the run ended. `tether work` is this package with the Exec
// handler, which runs a command; a Go program embeds a runner with a Go
// function as its handler:
//
//	err := runner.Run(ctx, runner.Config{
//		Server: "http://127.0.0.1:36725", Token: token, Queue: "code",
//		Handler: runner.HandlerFunc(func(ctx context.Context, job *runner.Job) (any, error) {
//			return map[string]any{"answer": 42}, nil
//		}),
//	})
//
// It talks to the server only through the generated Go client (package
// client). It is not the node lifecycle (internal/nodes) nor the worker
// registry (internal/fleet): it is a client of both, over HTTP.
//
// Invariants:
//   - A slot holds at most one lease at a time. While its handler runs the
//     lease is renewed (client.Keep) every RenewEvery, a third of the TTL by
//     default; every renewal and every report carries the claim's fence, so
//     a runner that lost its lease can never complete, fail or release a node
//     another holder has claimed since.
//   - The handler's context ends when the lease is lost (taken, cancelled,
//     expired, or renewals failed until its end), when the node's timeout_ms
//     has passed since the claim, or when the grace after a stop is over.
//   - How a run ends decides the one report made for it:
//     the handler returned a result (nil error): complete, with the result;
//     it returned an error (or panicked) while its context was live: fail,
//     with the error's text (the server requeues the node while attempts
//     remain, after its retry backoff, or makes it dead); a panic is logged
//     with its stack and the runner goes on;
//     it returned an error after its context ended: nothing is reported when
//     the lease was lost or timeout_ms passed (the server has already ended
//     the run), and the node is released (the attempt given back) when the
//     runner was stopping.
//     A report is retried with backoff on no answer, a 5xx or a 429, and never
//     past the lease's end as last renewed.
//   - Every call goes through the Go client's retries (Config.Retries, on by
//     default), which send again what is safe to repeat (docs/retries.md);
//     the runner's own Backoff then retries a claim or report that still
//     failed.
//   - Stopping (Run's context ends, Stop, or a fatal answer to a claim such as
//     401) ends claiming at once; a node claimed just as it stopped is released
//     untouched. Running handlers have Grace to finish; then their contexts are
//     cancelled (Kill ends the grace early). Run returns when every handler
//     has returned, so a handler must watch its context.
//   - If the process dies without stopping, its leases expire and the server
//     gives its nodes to other holders; nothing is lost, attempts count.
//   - Each slot reports itself to GET /v1/workers (idle, working on a node,
//     offline at the end) at every change and every Heartbeat; heartbeats are
//     best effort.
//   - A claim that hands out nothing because of flow control (the server's
//     204 with Tether-Throttled: a concurrency limit, a start rate or a
//     budget held the queue's nodes back) is not asked again at once: the
//     slot waits the server's Tether-Retry-After-Ms (or Retry-After), at
//     least its Backoff and at most a minute, so a throttled runner never
//     spins.
//   - A completion asks for the next node in the same call, unless the runner
//     is stopping: a slot goes back to its long poll only when the queue is
//     empty.
package runner
