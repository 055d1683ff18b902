package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/version"
)

// TestHealthAndMetricsNameTheBuild: /health carries the version and commit, and
// tether_build_info (always 1) labels it.
func TestHealthAndMetricsNameTheBuild(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	anon := e.as("")
	h, err := anon.GetHealthWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, h.StatusCode(), string(h.Body))
	require.Equal(t, version.String(), h.JSON200.Version)
	require.NotEmpty(t, h.JSON200.Version)
	// The commit beside it, when the build knows it (go test's does not).
	if c := version.Get().Commit; c != "" {
		require.NotNil(t, h.JSON200.Commit)
		require.Equal(t, c, *h.JSON200.Commit)
	} else {
		require.Nil(t, h.JSON200.Commit)
	}

	m, err := anon.GetMetricsWithResponse(ctx)
	require.NoError(t, err)
	v, ok := metricValue(t, string(m.Body), "tether_build_info", `version="`+version.String()+`"`)
	require.True(t, ok, "tether_build_info with the version label:\n%s", m.Body)
	require.EqualValues(t, 1, v)
}
