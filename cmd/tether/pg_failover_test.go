package main

// Tether over a highly available PostgreSQL survives a failover: a server on
// a pg_auto_failover formation's multi-host URL (target_session_attrs=
// read-write) takes creates, claims and completes while the primary's node
// is killed with SIGKILL and the synchronous secondary is promoted; every
// write Tether acknowledged is there after, and every error a client saw
// came during the failover and said to retry (a 503 or 429 with
// Retry-After, or a broken connection).

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/pgfailover"
)

// pgfRetryable says whether an answer tells the client to retry: no answer
// (the connection broke), or a 503 or 429 with Retry-After.
func pgfRetryable(status int, h http.Header, err error) bool {
	if err != nil {
		return true
	}
	return (status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests) && h.Get("Retry-After") != ""
}

func TestPostgresFailoverKeepsAcknowledgedWrites(t *testing.T) {
	f := pgfailover.Start(t, "tether")
	addr := freeAddr(t)
	srv := launch(t, "tether", addr, serverEnv(t.TempDir(), addr,
		"TETHER_STORE=postgres",
		"TETHER_POSTGRES_URL="+f.URL(),
		"TETHER_ADVERTISE_URL=http://"+addr,
	), "serve")
	srv.waitReady()

	hc := httpClient(t)
	ctx := context.Background()
	var ledger pgfailover.Ledger
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const workers = 4
	for w := range workers {
		c := srv.as(hc, mint(t, fmt.Sprintf("w%d", w), "dispatcher"))
		wg.Go(func() {
			// call runs one request and records its outcome: true when it
			// was acknowledged with want.
			call := func(what string, want int, do func() (*http.Response, error)) bool {
				began := time.Now()
				resp, err := do()
				var st int
				var h http.Header
				if resp != nil {
					st, h = resp.StatusCode, resp.Header
				}
				if err == nil && st == want {
					ledger.Ack(what, time.Now())
					return true
				}
				msg := fmt.Sprintf("%s: status %d", what, st)
				if err != nil {
					msg = fmt.Sprintf("%s: %v", what, err)
				}
				ledger.Fail(pgfailover.CallError{Began: began, Ended: time.Now(), Err: msg, Retryable: pgfRetryable(st, h, err)})
				select {
				case <-stop:
				case <-time.After(50 * time.Millisecond): // a client's back-off
				}
				return false
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%05d", w, i)
				if !call("create "+id, http.StatusCreated, func() (*http.Response, error) {
					r, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q")})
					if err != nil {
						return nil, err
					}
					return r.HTTPResponse, nil
				}) {
					continue
				}
				var fence int64
				if !call("claim "+id, http.StatusOK, func() (*http.Response, error) {
					r, err := c.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{TTLMS: ptr(int64(600_000))})
					if err == nil && r.JSON200 != nil {
						fence = r.JSON200.Lease.Fence
					}
					if err != nil {
						return nil, err
					}
					return r.HTTPResponse, nil
				}) {
					continue
				}
				call("complete "+id, http.StatusOK, func() (*http.Response, error) {
					r, err := c.CompleteNodeWithResponse(ctx, id, client.CompleteRequest{Fence: ptr(fence)})
					if err != nil {
						return nil, err
					}
					return r.HTTPResponse, nil
				})
			}
		})
	}
	waitAcks := func(since time.Time, n int, timeout time.Duration) {
		t.Helper()
		deadline := time.After(timeout)
		for ledger.AckedSince(since) < n {
			select {
			case <-deadline:
				close(stop)
				wg.Wait()
				t.Fatalf("only %d writes acknowledged in %v since %v (errors: %d; last: %v)",
					ledger.AckedSince(since), timeout, since.Format(time.TimeOnly), len(ledger.Errors()), lastErrors(ledger.Errors(), 5))
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitAcks(time.Now(), 300, time.Minute)

	killed := time.Now()
	if err := f.KillNode("a"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	primary, err := f.WaitPrimary(wctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	waitAcks(promoted, 300, 2*time.Minute)
	close(stop)
	wg.Wait()
	served := ledger.Served(killed)
	errs := ledger.Errors()
	t.Logf("primary a killed; %s promoted %.1fs later; Tether acknowledged writes again %.1fs after the kill; %d writes acknowledged, %d errors: %s",
		primary, promoted.Sub(killed).Seconds(), served.Sub(killed).Seconds(), len(ledger.Acked()), len(errs), errorKinds(errs))

	// Every acknowledged write is there, read through the same server.
	reader := srv.as(hc, mint(t, "reader", "dispatcher"))
	for _, what := range ledger.Acked() {
		verb, id, _ := strings.Cut(what, " ")
		r, err := reader.GetNodeWithResponse(ctx, id)
		if err != nil || r.JSON200 == nil {
			t.Errorf("%s was acknowledged; GET after the failover: %v %s", what, err, body(r))
			continue
		}
		if verb == "complete" && r.JSON200.Status != client.NodeStatusDone {
			t.Errorf("%s was acknowledged; the node is %s after the failover", what, r.JSON200.Status)
		}
	}
	if err := ledger.Check(killed, served, 6*time.Second); err != nil {
		t.Error(err)
	}
}

// errorKinds counts errors by their text without the node id.
func errorKinds(errs []pgfailover.CallError) string {
	kinds := map[string]int{}
	for _, e := range errs {
		verb, rest, _ := strings.Cut(e.Err, " ")
		_, reason, _ := strings.Cut(rest, ": ")
		kinds[verb+": "+reason]++
	}
	var parts []string
	for k, n := range kinds {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, n))
	}
	return strings.Join(parts, "; ")
}

func lastErrors(errs []pgfailover.CallError, n int) []string {
	var out []string
	for _, e := range errs[max(0, len(errs)-n):] {
		out = append(out, e.Err)
	}
	return out
}
