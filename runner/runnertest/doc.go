// Package runnertest tests runner handlers, in two ways:
//
//   - Run sends one node through a handler the way `tether work` would: a
//     real runner claims it from a real server (client/clienttest), the
//     handler runs while the runner keeps its lease, and the node's end —
//     completed with the handler's result, or failed with its error — comes
//     back as an Outcome, read from the server.
//   - NewJob builds the *runner.Job a handler receives, without a server,
//     for a unit test that calls Handler.Work directly.
//
// A test of a handler against a real server:
//
//	func TestGreet(t *testing.T) {
//		srv := clienttest.New(t, &clienttest.Options{InMemory: true})
//		out := runnertest.Run(t, srv, greet, client.NodeCreate{Props: &map[string]any{"name": "ada"}})
//		require.Equal(t, client.NodeStatusDone, out.Status)
//		require.JSONEq(t, `{"greeting":"hello ada"}`, string(out.Result))
//	}
//
// Invariants:
//   - Run creates its node with max_attempts 1 (unless the spec sets it) in
//     a queue of its own, so the handler runs it exactly once and nothing
//     else is claimed; it returns once the node has ended and the runner has
//     stopped.
//   - A Job from NewJob holds the node as a claim would show it (status
//     running, a lease with fence 1) and no client: a handler that calls
//     the server needs Run.
package runnertest
