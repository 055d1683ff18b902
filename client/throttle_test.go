package client_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

func TestThrottleOfReadsTheHeaders(t *testing.T) {
	t.Parallel()
	answer := func(kv ...string) *http.Response {
		resp := &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}}
		for i := 0; i < len(kv); i += 2 {
			resp.Header.Set(kv[i], kv[i+1])
		}
		return resp
	}
	require.Nil(t, client.ThrottleOf(nil))
	require.Nil(t, client.ThrottleOf(answer()), "an empty queue is not a throttle")

	th := client.ThrottleOf(answer("Tether-Throttled", `concurrency_limited; key="repo:acme/web"`,
		"Tether-Retry-After-Ms", "1500", "Retry-After", "2"))
	require.Equal(t, &client.Throttle{Reason: "concurrency_limited", Key: "repo:acme/web", RetryAfter: 1500 * time.Millisecond}, th,
		"the milliseconds win over the rounded seconds")

	th = client.ThrottleOf(answer("Tether-Throttled", `budget_exhausted; key="team \"a\\b\""`, "Retry-After", "60"))
	require.Equal(t, &client.Throttle{Reason: "budget_exhausted", Key: `team "a\b"`, RetryAfter: time.Minute},
		th, "a quoted key is unescaped; Retry-After stands in for the milliseconds")

	th = client.ThrottleOf(answer("Tether-Throttled", `concurrency_limited; key="repo:caf%C3%A9 100%25"`))
	require.Equal(t, `repo:café 100%25`, th.Key, "bytes past ASCII come as %XX; a %% before ASCII is itself")

	th = client.ThrottleOf(answer("Tether-Throttled", "start_rate_limited", "Tether-Retry-After-Ms", "soon"))
	require.Equal(t, &client.Throttle{Reason: "start_rate_limited"}, th, "no key, no usable wait")
}

func TestRetryAfterPrefersMilliseconds(t *testing.T) {
	t.Parallel()
	resp := &http.Response{Header: http.Header{}}
	require.Zero(t, client.RetryAfter(resp))
	resp.Header.Set("Retry-After", "3")
	require.Equal(t, 3*time.Second, client.RetryAfter(resp))
	resp.Header.Set("Tether-Retry-After-Ms", "250")
	require.Equal(t, 250*time.Millisecond, client.RetryAfter(resp))
	resp.Header.Set("Tether-Retry-After-Ms", "-1")
	require.Equal(t, 3*time.Second, client.RetryAfter(resp), "a negative wait is ignored")
}
