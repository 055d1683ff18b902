package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/nodes"
)

// A batch of completes runs many per transaction (nodes.CompleteMany). Each op
// must still answer exactly as POST /v1/nodes/{id}/complete would, failing
// ops among them included: this runs the same completes (three chunks: the
// first two with failures of every kind, which run again op by op, the last
// with none, which commits whole) through a batch on one set of nodes and
// through the endpoint on twins, and compares every answer and effect.
func TestBatchOfCompletesAnswersAsTheEndpoint(t *testing.T) {
	t.Parallel()
	e := start(t)
	w, bob := e.user("w"), e.user("bob")
	const n = 2*nodes.CompleteChunk + 22
	failing := func(i int) bool { return i < 2*nodes.CompleteChunk } // the first two chunks
	// b*: batched; s*: their twins on the endpoint.
	for _, prefix := range []string{"b", "s"} {
		e.mustCreate(task(prefix + "epic"))
		for i := range n {
			id := fmt.Sprintf("%s%03d", prefix, i)
			e.mustCreate(child(id, prefix+"epic"))
			if failing(i) && i%10 == 9 {
				e.mustClaim(bob, id, 60000) // someone else's lease: 409
			} else {
				e.mustClaim(w, id, 60000)
			}
		}
	}
	// The body of op i, the same for both.
	body := func(i int) string {
		switch {
		case !failing(i):
		case i%10 == 3:
			return `{"fence":99}` // a stale fence: 409
		case i%10 == 5:
			return `{"usage":{"":1}}` // refused before the transaction: 400
		case i%10 == 7:
			return `{"fence":0}` // refused while reading: 400
		}
		return fmt.Sprintf(`{"fence":1,"result":{"i":%d},"usage":{"tokens":%d}}`, i, i)
	}
	var ops []client.BatchOp
	for i := range n {
		var fields map[string]any
		require.NoError(t, json.Unmarshal([]byte(body(i)), &fields))
		ops = append(ops, bop(client.BatchOpOpComplete, fmt.Sprintf("b%03d", i), fields))
	}
	// The same node again at the end: completed already by the same holder,
	// the retry answers the node and changes nothing.
	ops = append(ops, bop(client.BatchOpOpComplete, "b000", map[string]any{"fence": 1}))
	results := e.mustBatch(w, ops...)

	tok := e.token("acme", "w")
	statuses := map[int]int{}
	for i := range n + 1 {
		id, b := fmt.Sprintf("s%03d", i%n), body(i%n)
		if i == n {
			b = `{"fence":1}`
		}
		resp, single := e.raw(http.MethodPost, "/v1/nodes/"+id+"/complete", tok, "application/json", b)
		require.Equal(t, resp.StatusCode, results[i].Status, "op %d (%s): %s", i, b, single)
		statuses[resp.StatusCode]++
		batched, err := json.Marshal(results[i].Body)
		require.NoError(t, err)
		require.Equal(t, keysOf(t, single), keysOf(t, batched), "op %d: the batched body has the endpoint's shape", i)
		if resp.StatusCode >= 400 {
			var p client.Problem
			require.NoError(t, json.Unmarshal(single, &p))
			require.Equal(t, string(p.Code), results[i].Body["code"], "op %d", i)
			require.Equal(t, p.Field, stringOr(results[i].Body["field"]), "op %d", i)
			continue
		}
		var done client.CompleteResponse
		decodeBody(t, results[i].Body, &done)
		require.Equal(t, client.NodeStatusDone, done.Node.Status)
		require.Equal(t, map[string]any{"i": float64(i % n)}, done.Node.Result, "op %d", i)
	}
	want := map[int]int{200: 1} // the retry of b000
	for i := range n {
		switch {
		case !failing(i):
			want[200]++
		case i%10 == 3 || i%10 == 9: // a stale fence, bob's lease
			want[409]++
		case i%10 == 5 || i%10 == 7: // bad usage, a bad fence
			want[400]++
		default:
			want[200]++
		}
	}
	require.Equal(t, want, statuses, "every kind of answer was met")

	// The effects are the endpoint's too.
	for i := range n {
		b, s := e.node(fmt.Sprintf("b%03d", i)), e.node(fmt.Sprintf("s%03d", i))
		require.Equal(t, s.Status, b.Status, "node %d", i)
		require.Equal(t, s.Attempts, b.Attempts, "node %d", i)
		require.Equal(t, e.assignedOutcomes(fmt.Sprintf("s%03d", i)), e.assignedOutcomes(fmt.Sprintf("b%03d", i)), "node %d", i)
	}
	require.Equal(t, e.node("sepic").UsageTotal, e.node("bepic").UsageTotal, "usage rolls up the same")
	require.NotEmpty(t, e.node("bepic").UsageTotal["tokens"])
	require.Equal(t, e.eventCount("s", "completed"), e.eventCount("b", "completed"), "one completed event per completion")
}

func stringOr(v any) string {
	s, _ := v.(string)
	return s
}

// eventCount counts the tenant's events of type typ about nodes whose id
// starts with prefix, reading the whole feed.
func (e *env) eventCount(prefix string, typ client.EventType) int {
	e.t.Helper()
	count := 0
	var after int64
	for {
		res, err := e.admin().ListEventsWithResponse(context.Background(), &client.ListEventsParams{After: &after, Limit: ptr(client.Limit(500))})
		require.NoError(e.t, err)
		require.NotNil(e.t, res.JSON200, string(res.Body))
		if len(res.JSON200.Items) == 0 {
			return count
		}
		for _, ev := range res.JSON200.Items {
			if ev.Type == typ && strings.HasPrefix(ev.NodeID, prefix) {
				count++
			}
			after = ev.Seq
		}
	}
}
