package client

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 2, 12, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"0":                             0,
		"3":                             3 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"Thu, 12 Feb 2026 10:00:07 GMT": 7 * time.Second,
		"Thu, 12 Feb 2026 09:59:00 GMT": 0,
	} {
		resp := &http.Response{Header: http.Header{}}
		if v != "" {
			resp.Header.Set("Retry-After", v)
		}
		require.Equal(t, want, retryAfter(resp, now), "Retry-After: %q", v)
	}
}

func TestClassifyNamesTheRepeatableCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method, path, body string
		want               opKind
	}{
		{"GET", "/base/v1/nodes", "", opRepeatable},
		{"POST", "/base/v1/nodes", "{}", opKeyed},
		{"POST", "/base/v1/nodes/batch", "{}", opKeyed},
		{"POST", "/base/v1/nodes/n1/renew", "{}", opRepeatable},
		{"POST", "/base/v1/nodes/n1/claim", "{}", opRepeatable},
		{"POST", "/base/v1/nodes/v1/claim", "{}", opRepeatable},
		{"POST", "/base/v1/nodes/n1/release", `{"fence":3}`, opRepeatable},
		{"POST", "/base/v1/nodes/n1/release", `{"to":"w2"}`, opOnce},
		{"POST", "/base/v1/nodes/n1/complete", `{"fence":3}`, opOnce},
		{"POST", "/base/v1/nodes/n1/extend", `{"ms":10}`, opOnce},
		{"POST", "/base/v1/queues/q/claim", "{}", opKeyed},
		{"POST", "/base/v1/queues/q/claims", `{"max":3}`, opKeyed},
		{"POST", "/base/v1/queues/q/pause", "{}", opOnce},
		{"POST", "/base/v1/workers/heartbeat", "{}", opRepeatable},
		{"POST", "/base/v1/inbox/m1/ack", "", opRepeatable},
		{"PATCH", "/base/v1/nodes/n1", "{}", opOnce},
		{"DELETE", "/base/v1/nodes/n1", "", opOnce},
		{"POST", "/v1/nodes", "{}", opOnce}, // not under the server's path
	} {
		req, err := http.NewRequest(tc.method, "http://127.0.0.1:1"+tc.path, bytes.NewReader([]byte(tc.body)))
		require.NoError(t, err)
		got := classify(req, basePath("http://127.0.0.1:1/base/"))
		if got == opFencedRelease {
			got = releaseKind(req)
		}
		require.Equal(t, tc.want, got, "%s %s %s", tc.method, tc.path, tc.body)
	}
}
