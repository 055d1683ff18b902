package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeadProbes: load balancers probe with HEAD; the answer is the GET's
// status without a body.
func TestHeadProbes(t *testing.T) {
	t.Parallel()
	e := start(t)
	c := e.as("")
	health, err := c.HeadHealthWithResponse(context.Background())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, health.StatusCode())
	require.Empty(t, health.Body)
	ready, err := c.HeadReadyWithResponse(context.Background())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ready.StatusCode())
	require.Empty(t, ready.Body)

	e.srv.API.SetReady(false)
	ready, err = c.HeadReadyWithResponse(context.Background())
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, ready.StatusCode())
	require.Empty(t, ready.Body)
}
