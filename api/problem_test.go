package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
)

// asByKind is what problemFor did before knownError: errors.As (or
// errors.Is) for each kind in turn, the first kind found deciding.
func asByKind(err error) error {
	targets := []any{
		new(*fault.Invalid), new(*fault.NotFound), new(*fault.AlreadyExists), new(*fault.Conflict),
		new(*fault.LeaseLost), new(*fault.NotClaimable), new(*fault.Cycle), new(*fault.PreconditionFailed),
		new(*fault.Forbidden), new(*fault.Unauthorized), new(*fault.RateLimited), new(*fault.IdempotencyMismatch),
		new(*fault.TooLarge), new(*http.MaxBytesError),
	}
	for _, t := range targets {
		if errors.As(err, t) {
			switch t := t.(type) {
			case **fault.Invalid:
				return *t
			case **fault.NotFound:
				return *t
			case **fault.AlreadyExists:
				return *t
			case **fault.Conflict:
				return *t
			case **fault.LeaseLost:
				return *t
			case **fault.NotClaimable:
				return *t
			case **fault.Cycle:
				return *t
			case **fault.PreconditionFailed:
				return *t
			case **fault.Forbidden:
				return *t
			case **fault.Unauthorized:
				return *t
			case **fault.RateLimited:
				return *t
			case **fault.IdempotencyMismatch:
				return *t
			case **fault.TooLarge:
				return *t
			case **http.MaxBytesError:
				return *t
			}
		}
	}
	for _, sentinel := range []error{fault.ErrUnavailable, context.Canceled} {
		if errors.Is(err, sentinel) {
			return sentinel
		}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return nil
}

func TestKnownErrorIsErrorsAsByKind(t *testing.T) {
	t.Parallel()
	kinds := []error{
		&fault.Invalid{Field: "f", Reason: "bad"}, &fault.NotFound{What: "node", ID: "n"},
		&fault.AlreadyExists{What: "node", ID: "n"}, &fault.Conflict{Reason: "held", Holder: "h", ExpiresAt: time.Now()},
		&fault.LeaseLost{Reason: "stale"}, &fault.NotClaimable{Reason: fault.ReasonBlocked},
		&fault.Cycle{}, &fault.PreconditionFailed{Current: 3}, &fault.Forbidden{Reason: "no"},
		&fault.Unauthorized{Reason: "who"}, &fault.RateLimited{Reason: "slow", RetryAfter: time.Second},
		&fault.IdempotencyMismatch{Key: "k"}, &fault.TooLarge{Limit: 10}, &http.MaxBytesError{Limit: 10},
		fault.ErrUnavailable, context.Canceled, context.DeadlineExceeded, echo.NewHTTPError(http.StatusNotFound, "no"),
		errors.New("internal"),
	}
	var cases []error
	for _, a := range kinds {
		cases = append(cases, a, fmt.Errorf("error doing it: %w", a), fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", a)))
		for _, b := range kinds {
			cases = append(cases,
				errors.Join(a, b),
				fmt.Errorf("both: %w and %w", a, fmt.Errorf("wrapped: %w", b)),
				echo.NewHTTPError(http.StatusBadRequest).SetInternal(errors.Join(fmt.Errorf("x: %w", a), b)),
			)
		}
	}
	for _, err := range cases {
		require.Equal(t, asByKind(err), knownError(err), "%v", err)
	}
	require.Nil(t, knownError(nil))
}

func TestProblemForUnknownIsInternal(t *testing.T) {
	t.Parallel()
	p, known := problemFor(fmt.Errorf("error reading node: %w", errors.New("disk on fire")))
	require.False(t, known)
	require.Equal(t, http.StatusInternalServerError, p.Status)
	require.NotContains(t, p.Detail, "disk")

	p, known = problemFor(fmt.Errorf("error claiming node: %w", &fault.LeaseLost{Reason: "stale fence"}))
	require.True(t, known)
	require.Equal(t, CodeLeaseLost, p.Code)
}

func TestProblemForDeadlineIsUnavailable(t *testing.T) {
	t.Parallel()
	p, known := problemFor(fmt.Errorf("error reading node: %w", context.DeadlineExceeded))
	require.True(t, known)
	require.Equal(t, http.StatusServiceUnavailable, p.Status)
	require.Equal(t, CodeUnavailable, p.Code)
}

// TestUnavailableSaysWhenToRetry: every unavailable answer (a store broken
// by a database failover included) carries Retry-After.
func TestUnavailableSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	for _, err := range []error{fault.ErrUnavailable, context.Canceled, context.DeadlineExceeded} {
		p, known := problemFor(fmt.Errorf("error committing: %w", err))
		require.True(t, known, "%v", err)
		require.Equal(t, CodeUnavailable, p.Code)
		require.Equal(t, unavailableRetryAfter, p.retryAfter, "%v", err)
	}
}

func TestProblemForDiskFull(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("error creating node: %w", &fault.DiskFull{}),
		fmt.Errorf("error writing blob: %w", &os.PathError{Op: "write", Path: "/data/blobs/tmp-1", Err: syscall.ENOSPC}),
	} {
		p, known := problemFor(err)
		require.True(t, known, "%v", err)
		require.Equal(t, http.StatusServiceUnavailable, p.Status)
		require.Equal(t, CodeDiskFull, p.Code)
		require.Equal(t, diskFullRetryAfter, p.retryAfter)
		require.Contains(t, p.Detail, "TETHER_DATA_DIR")
		require.NotContains(t, p.Detail, "/data", "no path reaches the client")
	}
}
