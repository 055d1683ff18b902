package api

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/tenancy"
	"github.com/tether-run/tether/internal/testsignal"
)

func TestWaitersDefaultsAndRelease(t *testing.T) {
	t.Parallel()
	w := newWaiters(WaitLimits{}, new(testsignal.Signal[string]))
	require.Equal(t, WaitLimits{PerIdentity: DefaultWaitsPerIdentity, PerTenant: DefaultWaitsPerTenant}, w.lim)

	p := &tenancy.Principal{Tenant: "acme", Subject: "a"}
	var releases []func()
	for range DefaultWaitsPerIdentity {
		r, err := w.acquire(p)
		require.NoError(t, err)
		releases = append(releases, r)
	}
	_, err := w.acquire(p)
	var rl *fault.RateLimited
	require.True(t, errors.As(err, &rl), "one past the default cap: %v", err)
	for _, r := range releases {
		r()
	}
	require.Empty(t, w.byIdentity, "every place was given back")
	require.Empty(t, w.byTenant)

	// A negative cap is none.
	w = newWaiters(WaitLimits{PerIdentity: -1, PerTenant: -1}, new(testsignal.Signal[string]))
	for range 2 * DefaultWaitsPerTenant {
		_, err := w.acquire(p)
		require.NoError(t, err)
	}
}
