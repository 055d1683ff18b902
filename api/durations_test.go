package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/duration"
)

// msProbe sends one value (as JSON number text) for a millisecond field and
// returns the answer's status and, for a 400, the field and detail named.
type msProbe struct {
	field    string // as the 400 names it
	min, max int64
	send     func(e *env, v string) (int, []byte)
}

// msValues are the values every millisecond field is tried with.
func msValues(p msProbe) []struct {
	v  string
	ok bool
} {
	return []struct {
		v  string
		ok bool
	}{
		{"0", p.min <= 0},
		{"-1", false},
		{strconv.FormatInt(p.max, 10), true},
		{strconv.FormatInt(p.max+1, 10), false},
		{"9007199254740992", false},     // 2^53
		{"9223372036854775807", false},  // 2^63-1
		{"18446744073709551616", false}, // 2^64
	}
}

type problemBody struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

func post(e *env, tok, path, body string) (int, []byte) {
	resp, b := e.raw(http.MethodPost, path, tok, "application/json", body)
	return resp.StatusCode, b
}

// batchResult0 unwraps the first op's answer of a POST /v1/batch.
func batchResult0(t testing.TB) func(status int, b []byte) (int, []byte) {
	return func(status int, b []byte) (int, []byte) {
		return batchOp0(t, status, b)
	}
}

func batchOp0(t testing.TB, status int, b []byte) (int, []byte) {
	require.Equal(t, http.StatusOK, status, string(b))
	var out struct {
		Results []struct {
			Status int             `json:"status"`
			Body   json.RawMessage `json:"body"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(b, &out))
	require.Len(t, out.Results, 1)
	return out.Results[0].Status, out.Results[0].Body
}

// TestEveryMillisecondFieldHasOneRange sends every millisecond field a
// client can write at 0, -1, its maximum, its maximum + 1, 2^53, 2^63-1 and
// 2^64: in range it is never a 400 for that field; out of range it is a 400
// naming the field and stating the range, and nothing changes.
func TestEveryMillisecondFieldHasOneRange(t *testing.T) {
	t.Parallel()
	e := start(t)
	w := e.token("acme", "w1", "worker")
	d := e.token("acme", "head", "dispatcher")
	admin := e.token("acme", "root", "admin")
	n := 0
	queued := func() string { // a fresh ready node in queue q
		n++
		id := fmt.Sprintf("n%d", n)
		e.mustCreate(task(id))
		return id
	}
	claimed := func() (string, int64) {
		id := queued()
		st, b := post(e, w, "/v1/nodes/"+id+"/claim", `{}`)
		require.Equal(t, http.StatusOK, st, string(b))
		var c struct {
			Lease struct{ Fence int64 } `json:"lease"`
		}
		require.NoError(t, json.Unmarshal(b, &c))
		return id, c.Lease.Fence
	}
	long := duration.MaxMS
	probes := []msProbe{
		{"ttl_ms", 1, long, func(e *env, v string) (int, []byte) {
			return post(e, w, "/v1/nodes/"+queued()+"/claim", `{"ttl_ms":`+v+`}`)
		}},
		{"ttl_ms", 1, long, func(e *env, v string) (int, []byte) {
			return post(e, w, "/v1/nodes/"+queued()+"/status", `{"status":"running","ttl_ms":`+v+`}`)
		}},
		{"ttl_ms", 1, long, func(e *env, v string) (int, []byte) {
			queued()
			return post(e, w, "/v1/queues/default/claim", `{"ttl_ms":`+v+`}`)
		}},
		{"ttl_ms", 1, long, func(e *env, v string) (int, []byte) {
			queued()
			return post(e, w, "/v1/queues/default/claims", `{"max":1,"ttl_ms":`+v+`}`)
		}},
		{"wait_ms", 0, 60000, func(e *env, v string) (int, []byte) {
			queued() // a ready node: an in-range wait answers at once
			return post(e, w, "/v1/queues/default/claim", `{"wait_ms":`+v+`}`)
		}},
		{"wait_ms", 0, 60000, func(e *env, v string) (int, []byte) {
			queued()
			return post(e, w, "/v1/queues/default/claims", `{"max":1,"wait_ms":`+v+`}`)
		}},
		{"wait_ms", 0, 60000, func(e *env, v string) (int, []byte) {
			queued() // events exist after 0: an in-range wait answers at once
			resp, b := e.raw(http.MethodGet, "/v1/events?after=0&wait_ms="+v, w, "", "")
			return resp.StatusCode, b
		}},
		{"ms", 1, long, func(e *env, v string) (int, []byte) {
			id, fence := claimed()
			return post(e, w, "/v1/nodes/"+id+"/extend", fmt.Sprintf(`{"fence":%d,"ms":%s}`, fence, v))
		}},
		{"ops[0].ms", 1, long, func(e *env, v string) (int, []byte) {
			id, _ := claimed()
			st, b := batchResult0(t)(post(e, w, "/v1/batch", `{"ops":[{"op":"extend","id":"`+id+`","ms":`+v+`}]}`))
			return st, fixField(b, "ops[0].")
		}},
		{"retry_in_ms", 0, long, func(e *env, v string) (int, []byte) {
			id, _ := claimed()
			return post(e, w, "/v1/nodes/"+id+"/fail", `{"error":"x","retry_in_ms":`+v+`}`)
		}},
		{"ops[0].retry_in_ms", 0, long, func(e *env, v string) (int, []byte) {
			id, _ := claimed()
			st, b := batchResult0(t)(post(e, w, "/v1/batch", `{"ops":[{"op":"fail","id":"`+id+`","error":"x","retry_in_ms":`+v+`}]}`))
			return st, fixField(b, "ops[0].")
		}},
		{"timeout_ms", 1, long, func(e *env, v string) (int, []byte) {
			return post(e, d, "/v1/nodes", `{"type":"t","timeout_ms":`+v+`}`)
		}},
		{"delay_ms", 0, long, func(e *env, v string) (int, []byte) {
			return post(e, d, "/v1/nodes", `{"type":"t","delay_ms":`+v+`}`)
		}},
		{"backoff.initial_ms", 0, long, func(e *env, v string) (int, []byte) {
			return post(e, d, "/v1/nodes", `{"type":"t","backoff":{"initial_ms":`+v+`,"max_ms":`+strconv.FormatInt(long, 10)+`,"factor":2}}`)
		}},
		{"backoff.max_ms", 0, long, func(e *env, v string) (int, []byte) {
			return post(e, d, "/v1/nodes", `{"type":"t","backoff":{"initial_ms":0,"max_ms":`+v+`,"factor":2}}`)
		}},
		{"items[1].timeout_ms", 1, long, func(e *env, v string) (int, []byte) {
			return post(e, d, "/v1/nodes/batch", `{"items":[{"type":"t"},{"type":"t","timeout_ms":`+v+`}]}`)
		}},
		{"items[0].backoff.max_ms", 0, long, func(e *env, v string) (int, []byte) {
			return post(e, d, "/v1/nodes/batch", `{"items":[{"type":"t","backoff":{"max_ms":`+v+`,"factor":1}}]}`)
		}},
		{"timeout_ms", 1, long, func(e *env, v string) (int, []byte) {
			id := queued()
			resp, b := e.raw(http.MethodPatch, "/v1/nodes/"+id, d, "application/merge-patch+json", `{"timeout_ms":`+v+`}`)
			return resp.StatusCode, b
		}},
		{"claim_ttl_default_ms", 1000, long, func(e *env, v string) (int, []byte) {
			resp, b := e.raw(http.MethodPatch, "/v1/tenant/policy", admin, "application/merge-patch+json", `{"claim_ttl_default_ms":`+v+`}`)
			return resp.StatusCode, b
		}},
		{"claim_ttl_max_ms", 1000, long, func(e *env, v string) (int, []byte) {
			resp, b := e.raw(http.MethodPatch, "/v1/tenant/policy", admin, "application/merge-patch+json", `{"claim_ttl_max_ms":`+v+`}`)
			return resp.StatusCode, b
		}},
	}
	for i, p := range probes {
		require.Equal(t, duration.Of(p.field).Max, p.max, "probe %d: the documented maximum of %s", i, p.field)
		require.Equal(t, duration.Of(p.field).Min, p.min, "probe %d: the documented minimum of %s", i, p.field)
		for _, tc := range msValues(p) {
			status, b := p.send(e, tc.v)
			var prob problemBody
			_ = json.Unmarshal(b, &prob)
			if tc.ok {
				// (A policy TTL in range may still break a rule of the policy,
				// such as the server's ceiling: a 400 that is not about range.)
				require.False(t, status == http.StatusBadRequest && strings.HasSuffix(prob.Field, p.field) && strings.Contains(prob.Detail, "from "),
					"probe %d: %s=%s is in range, got %d %s", i, p.field, tc.v, status, b)
				continue
			}
			require.Equal(t, http.StatusBadRequest, status, "probe %d: %s=%s: %s", i, p.field, tc.v, b)
			require.Equal(t, p.field, prob.Field, "probe %d: %s=%s: %s", i, p.field, tc.v, b)
			require.Contains(t, prob.Detail, fmt.Sprintf("from %d to %d", p.min, p.max), "probe %d: %s=%s", i, p.field, tc.v)
		}
	}
}

// fixField is a batch op's problem with its field prefixed as the whole
// request would name it, so that one probe table fits both.
func fixField(b []byte, prefix string) []byte {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	if f, ok := m["field"].(string); ok {
		m["field"] = prefix + f
	}
	out, _ := json.Marshal(m)
	return out
}

// TestLongDurationsDoNotWrap: values that used
// to wrap in the ms→ns conversion are refused, and the longest value allowed
// is served as what it says.
func TestLongDurationsDoNotWrap(t *testing.T) {
	t.Parallel()
	e := start(t)
	w := e.token("acme", "w1", "worker")
	d := e.token("acme", "head", "dispatcher")
	long := strconv.FormatInt(duration.MaxMS, 10)
	now := e.clk.Now()

	// A claim at the longest ttl_ms is capped to the tenant's maximum.
	e.mustCreate(task("c1"))
	st, b := post(e, w, "/v1/nodes/c1/claim", `{"ttl_ms":9223372036854775807}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	st, b = post(e, w, "/v1/nodes/c1/claim", `{"ttl_ms":18446744073710}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	st, b = post(e, w, "/v1/nodes/c1/claim", `{"ttl_ms":`+long+`}`)
	require.Equal(t, http.StatusOK, st, string(b))
	var claim struct {
		CappedToMax bool `json:"capped_to_max"`
		Lease       struct {
			Fence     int64     `json:"fence"`
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"lease"`
		Node struct {
			Attempts int64 `json:"attempts"`
		} `json:"node"`
	}
	require.NoError(t, json.Unmarshal(b, &claim))
	require.True(t, claim.CappedToMax)
	require.Equal(t, now.Add(2*time.Hour), claim.Lease.ExpiresAt, "capped to claim_ttl_max_ms")
	require.Equal(t, int64(1), claim.Node.Attempts, "the refused claims spent no attempt")

	// Extend: the wrapping value is refused, the longest is capped.
	st, b = post(e, w, "/v1/nodes/c1/extend", `{"ms":18446744073710}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	st, b = post(e, w, "/v1/nodes/c1/extend", `{"ms":`+long+`}`)
	require.Equal(t, http.StatusOK, st, string(b))
	require.Contains(t, string(b), `"capped_to_max":true`)

	// A timeout of 2^63-1 is refused; the longest allowed does not kill the
	// run on claim.
	st, b = post(e, d, "/v1/nodes", `{"id":"t1","type":"t","queue":"default","max_attempts":1,"timeout_ms":9223372036854775807}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	st, b = post(e, d, "/v1/nodes", `{"id":"t1","type":"t","queue":"default","max_attempts":1,"timeout_ms":`+long+`}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	st, b = post(e, w, "/v1/nodes/t1/claim", `{}`)
	require.Equal(t, http.StatusOK, st, string(b))
	e.clk.Advance(2 * time.Second)
	resp, b := e.raw(http.MethodGet, "/v1/nodes/t1", w, "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), `"status":"running"`, "a long timeout is not already over")

	// delay_ms far away is refused; the longest allowed lands ten years on.
	st, b = post(e, d, "/v1/nodes", `{"type":"t","delay_ms":9999999999999}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	st, b = post(e, d, "/v1/nodes", `{"type":"t","delay_ms":`+long+`}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	requireRunAtAfter(t, b, now.AddDate(9, 0, 0))

	// retry_in_ms and a backoff at their longest put run_at years ahead,
	// not now.
	e.mustCreate(task("f1"))
	st, b = post(e, w, "/v1/nodes/f1/claim", `{}`)
	require.Equal(t, http.StatusOK, st, string(b))
	st, b = post(e, w, "/v1/nodes/f1/fail", `{"error":"x","retry_in_ms":9999999999999}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	require.NotContains(t, string(b), "negative")
	st, b = post(e, w, "/v1/nodes/f1/fail", `{"error":"x","retry_in_ms":`+long+`}`)
	require.Equal(t, http.StatusOK, st, string(b))
	requireRunAtAfter(t, json.RawMessage(nodeOf(t, b)), now.AddDate(9, 0, 0))

	st, b = post(e, d, "/v1/nodes", `{"id":"b1","type":"t","queue":"default","backoff":{"initial_ms":`+long+`,"max_ms":`+long+`,"factor":100}}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	for range 2 { // the second delay grows past max_ms: capped, never wrapped
		st, b = post(e, w, "/v1/nodes/b1/claim", `{}`)
		require.Equal(t, http.StatusOK, st, string(b))
		st, b = post(e, w, "/v1/nodes/b1/fail", `{"error":"x"}`)
		require.Equal(t, http.StatusOK, st, string(b))
		requireRunAtAfter(t, json.RawMessage(nodeOf(t, b)), now.AddDate(4, 0, 0)) // half of it at least (jitter)
		// run_at is ten years away: clear it so that the next claim is ready.
		resp, b = e.raw(http.MethodPatch, "/v1/nodes/b1", d, "application/merge-patch+json", `{"run_at":null}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	}

	// wait_ms 2^63-1 is a 400 on both long polls, not an answer at once.
	st, b = post(e, w, "/v1/queues/default/claim", `{"wait_ms":9223372036854775807}`)
	require.Equal(t, http.StatusBadRequest, st, string(b))
	resp, b = e.raw(http.MethodGet, "/v1/events?wait_ms=9223372036854775807", w, "", "")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
}

func nodeOf(t testing.TB, b []byte) []byte {
	var out struct {
		Node json.RawMessage `json:"node"`
	}
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return out.Node
}

func requireRunAtAfter(t testing.TB, node []byte, after time.Time) {
	t.Helper()
	var n struct {
		RunAt *time.Time `json:"run_at"`
	}
	require.NoError(t, json.Unmarshal(node, &n), string(node))
	require.NotNil(t, n.RunAt, string(node))
	require.True(t, n.RunAt.After(after), "run_at %s is after %s", n.RunAt, after)
}
