package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// serveThrough runs a handler that answers 200 with a JSON body, an ETag and
// a flush, behind a freshWriter whose lease is fresh or not.
func serveThrough(t *testing.T, fresh bool) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/v1/nodes/n1/renew", nil)
	rec.Header().Set(headerRequestID, "req-1")
	rec.Header().Set(HeaderServedBy, "srv-1")
	w := &freshWriter{ResponseWriter: rec, r: r, fresh: func(context.Context) bool { return fresh }}
	w.Header().Set("ETag", `"7"`)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write([]byte(`{"lease":{"fence":1}}`))
	require.NoError(t, err)
	w.Flush()
	return rec
}

func TestFreshWriterPassesAnswersWhileTheLeaseIsFresh(t *testing.T) {
	t.Parallel()
	rec := serveThrough(t, true)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, `{"lease":{"fence":1}}`, rec.Body.String())
	require.Equal(t, `"7"`, rec.Header().Get("ETag"))
	require.True(t, rec.Flushed)
}

func TestFreshWriterReplacesAnAnswerOnceTheLeaseIsStale(t *testing.T) {
	t.Parallel()
	rec := serveThrough(t, false)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	require.Empty(t, rec.Header().Get("ETag"), "nothing of the replaced answer is kept")
	require.Equal(t, "req-1", rec.Header().Get(headerRequestID))
	require.Equal(t, "srv-1", rec.Header().Get(HeaderServedBy))
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	var p problem
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	require.Equal(t, "unavailable", p.Code)
	require.Equal(t, "req-1", p.RequestID)
	require.Contains(t, p.Detail, "outcome is unknown")
}

func TestFreshWriterChecksAStreamAtItsFirstFlush(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/v1/events", nil)
	w := &freshWriter{ResponseWriter: rec, r: r, fresh: func(context.Context) bool { return false }}
	w.Flush()
	_, err := w.Write([]byte("data: x\n\n"))
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.NotContains(t, rec.Body.String(), "data: x")
}
