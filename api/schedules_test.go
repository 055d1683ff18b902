package api_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/core"
	"github.com/tether-run/tether/internal/schedule"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/tenancy"
)

// startOn is start on a given data directory and fake clock, so that a test
// can stop the server and start another on the same store. stop shuts the
// server down (once; the test's cleanup calls it too).
func startOn(t *testing.T, dir string, clk *clocktest.Fake) (*env, func()) {
	t.Helper()
	cfg := server.Config{
		Config: core.Config{
			DataDir:        dir,
			Clock:          clk,
			ReaperInterval: time.Second,
			Tenant: tenancy.Config{
				JWTSecrets: []string{testSecret}, TTLCeilingMS: 86400000,
				Defaults: tenancy.Policy{ClaimTTLDefaultMS: 300000, ClaimTTLMaxMS: 7200000, MaxAttemptsDefault: 5},
			},
		},
		MaxBodyBytes: 64 << 10,
	}
	srv, err := server.Open(context.Background(), cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, srv.Shutdown(ctx))
		})
	}
	t.Cleanup(stop)
	return &env{t: t, srv: srv, url: "http://" + ln.Addr().String(), clk: clk}, stop
}

func (e *env) createSchedule(body client.ScheduleCreate) client.Schedule {
	e.t.Helper()
	res, err := e.dispatcher().CreateScheduleWithResponse(context.Background(), body)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusCreated, res.StatusCode(), string(res.Body))
	return *res.JSON201
}

func (e *env) schedule(id string) client.Schedule {
	e.t.Helper()
	res, err := e.user("auditor", "reader").GetScheduleWithResponse(context.Background(), id)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return *res.JSON200
}

// runs lists every run of schedule id, newest first.
func (e *env) runs(id string) []client.ScheduleRun {
	e.t.Helper()
	res, err := e.user("auditor", "reader").ListScheduleRunsWithResponse(context.Background(), id, &client.ListScheduleRunsParams{Limit: ptr(1000)})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Items
}

// waitRuns waits until schedule id has n run records: for the catch-up
// fires a server makes as it starts, before a test can enable the loop's
// Fired signal (otherwise fireNext and waitFired).
func (e *env) waitRuns(id string, n int) []client.ScheduleRun {
	e.t.Helper()
	var got []client.ScheduleRun
	require.Eventually(e.t, func() bool {
		got = e.runs(id)
		return len(got) >= n
	}, 10*time.Second, 10*time.Millisecond, "waiting for %d runs of %s", n, id)
	return got
}

// fireNext advances the clock to the schedule's next fire and returns its
// runs once the loop's pass has fired it (a new run record, or a skipped row
// whose count grew).
func (e *env) fireNext(id string) []client.ScheduleRun {
	e.t.Helper()
	s := e.schedule(id)
	require.NotNil(e.t, s.NextFireAt, "schedule %s has no next fire", id)
	e.watchFires()
	e.advanceTo(*s.NextFireAt)
	e.waitFired(id)
	return e.runs(id)
}

// watchFires enables the firing loop's Fired signal, before the move of
// the clock whose fires a test waits for.
func (e *env) watchFires() { e.srv.Schedules.TestSignals.Fired.Init(e.t) }

// waitFired waits until the firing loop's passes have fired every one of
// ids (made durable: readers see the fires).
func (e *env) waitFired(ids ...string) {
	e.t.Helper()
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	e.srv.Schedules.TestSignals.Fired.WaitFor(e.t, func(refs []schedule.Ref) bool {
		for _, r := range refs {
			if r.Tenant == "acme" {
				delete(left, r.ID)
			}
		}
		return len(left) == 0
	})
}

// watchFiringLoop enables the firing loop's Idle signal, before the writes
// whose effect on the loop a test waits for.
func (e *env) watchFiringLoop() { e.srv.Schedules.TestSignals.Idle.Init(e.t) }

// waitFiringLoopIdle waits until the firing loop sleeps towards at (zero:
// with nothing due); until the clock reaches at, nothing fires.
func (e *env) waitFiringLoopIdle(at time.Time) {
	e.t.Helper()
	e.srv.Schedules.TestSignals.Idle.WaitFor(e.t, func(v time.Time) bool { return v.Equal(at) })
}

func (e *env) advanceTo(at time.Time) {
	if d := at.Sub(e.clk.Now()); d > 0 {
		e.clk.Advance(d)
	}
}

// claimAnd claims node id as a worker and then fails it (err != "") or
// completes it with result.
func (e *env) claimAnd(id string, result any, failure string) {
	e.t.Helper()
	w := e.user("w1", "worker")
	ctx := context.Background()
	cr, err := w.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, cr.StatusCode(), string(cr.Body))
	if failure != "" {
		fr, err := w.FailNodeWithResponse(ctx, id, client.FailRequest{Error: failure, Requeue: ptr(false)})
		require.NoError(e.t, err)
		require.Equal(e.t, http.StatusOK, fr.StatusCode(), string(fr.Body))
		return
	}
	res, err := w.CompleteNodeWithResponse(ctx, id, client.CompleteRequest{Result: result})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
}

func job(typ string) client.ScheduleNode {
	return client.ScheduleNode{Type: typ, Queue: ptr("default")}
}

func TestScheduleCreateShowsTheNextFiveFires(t *testing.T) {
	t.Parallel()
	e := start(t)
	now := e.clk.Now()
	s := e.createSchedule(client.ScheduleCreate{ID: ptr("digest"), Cron: ptr("*/5 * * * *"), Template: job("digest")})
	require.Equal(t, "digest", s.ID)
	require.Equal(t, "UTC", s.Timezone)
	require.Equal(t, client.ScheduleOverlapSkip, s.Overlap)
	require.Equal(t, client.ScheduleCatchup("one"), s.Catchup)
	require.Equal(t, int64(60000), s.CatchupWindowMS)
	require.Equal(t, []int64{30000, 60000, 300000, 900000, 3600000}, s.BackoffMS)
	require.True(t, s.Enabled)
	require.Equal(t, "head", s.CreatedBy)
	require.Nil(t, s.LastRunSeq)
	require.Len(t, s.NextFires, 5)
	first := now.Truncate(5 * time.Minute).Add(5 * time.Minute)
	for i, f := range s.NextFires {
		require.True(t, f.Equal(first.Add(time.Duration(i)*5*time.Minute)), "fire %d is %s", i, f)
	}
	require.True(t, s.NextFireAt.Equal(s.NextFires[0]))

	// A generated id, @every, a reader sees both in id order.
	g := e.createSchedule(client.ScheduleCreate{Cron: ptr("@every 90s"), Template: job("tick")})
	require.Len(t, g.ID, 36)
	res, err := e.user("auditor", "reader").ListSchedulesWithResponse(context.Background(), &client.ListSchedulesParams{Limit: ptr(1)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode())
	require.Len(t, res.JSON200.Items, 1)
	require.NotNil(t, res.JSON200.NextCursor)
	firstID := res.JSON200.Items[0].ID
	res, err = e.user("auditor", "reader").ListSchedulesWithResponse(context.Background(), &client.ListSchedulesParams{Limit: ptr(1), Cursor: res.JSON200.NextCursor})
	require.NoError(t, err)
	require.Len(t, res.JSON200.Items, 1)
	require.Nil(t, res.JSON200.NextCursor)
	require.Equal(t, []string{g.ID, "digest"}, []string{firstID, res.JSON200.Items[0].ID}, "in id order")

	// The same id again is already_exists.
	dup, err := e.dispatcher().CreateScheduleWithResponse(context.Background(), client.ScheduleCreate{ID: ptr("digest"), Cron: ptr("@hourly"), Template: job("x")})
	require.NoError(t, err)
	requireProblem(t, dup.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeAlreadyExists)
}

func TestScheduleFiresOnTheFakeClock(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.watchFiringLoop()
	s := e.createSchedule(client.ScheduleCreate{ID: ptr("minutely"), Cron: ptr("* * * * *"),
		Template: client.ScheduleNode{Type: "report", Queue: ptr("default"), Title: ptr("the report"), Labels: &[]string{"cron"}}})
	at := *s.NextFireAt

	// Nothing before the instant: the loop sleeps towards it, and the clock
	// stops short of it.
	e.waitFiringLoopIdle(at)
	e.advanceTo(at.Add(-time.Millisecond))
	require.Empty(t, e.runs("minutely"))

	runs := e.fireNext("minutely")
	require.Len(t, runs, 1)
	r := runs[0]
	require.Equal(t, int64(1), r.Seq)
	require.Equal(t, client.ScheduleRunTrigger("schedule"), r.Trigger)
	require.True(t, r.ScheduledAt.Equal(at))
	require.True(t, r.FiredAt.Equal(at))
	require.Equal(t, client.ScheduleRunStatusQueued, r.Status)
	require.Len(t, r.Nodes, 1)
	require.Equal(t, r.Nodes[0], *r.NodeID)

	n := e.node(*r.NodeID)
	require.Equal(t, "report", n.Type)
	require.Equal(t, "the report", n.Title)
	require.Equal(t, []string{"cron"}, n.Labels)
	require.Equal(t, "schedule:minutely", n.CreatedBy)
	require.Equal(t, client.NodeStatusQueued, n.Status)

	// Its created event was written with it.
	ev, err := e.dispatcher().ListNodeEventsWithResponse(context.Background(), n.ID, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ev.StatusCode(), string(ev.Body))
	require.Equal(t, client.EventType("created"), ev.JSON200.Items[0].Type)
	require.Equal(t, "schedule:minutely", ev.JSON200.Items[0].By)

	// The next fire is a minute on.
	s = e.schedule("minutely")
	require.True(t, s.NextFireAt.Equal(at.Add(time.Minute)), "next %s", s.NextFireAt)
	require.Equal(t, int64(1), *s.LastRunSeq)
}

// A schedule fires across a restart: the fires missed while the server was
// down run once (catchup one) when they are inside the catch-up window, and
// older ones are recorded as skipped. No fire is made twice.
func TestScheduleCatchesUpAcrossARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 4, 1, 9, 59, 30, 0, time.UTC))
	e, stop := startOn(t, dir, clk)
	e.createSchedule(client.ScheduleCreate{ID: ptr("m"), Cron: ptr("* * * * *"), Template: job("m"), CatchupWindowMS: ptr(int64(180000)),
		Overlap: ptr(client.ScheduleOverlapAllow)})
	e.createSchedule(client.ScheduleCreate{ID: ptr("all"), Cron: ptr("* * * * *"), Template: job("a"), CatchupWindowMS: ptr(int64(180000)),
		Catchup: ptr(client.ScheduleCatchup("all")), Overlap: ptr(client.ScheduleOverlapAllow)})
	first := e.fireNext("m") // 10:00
	require.Len(t, first, 1)
	e.waitRuns("all", 1)
	stop()

	// Down from 10:00:00 to 10:06:30: the fires of 10:01 to 10:06 are missed;
	// the window (3 min) reaches back to 10:03:30.
	clk.Advance(6*time.Minute + 30*time.Second)
	e2, _ := startOn(t, dir, clk)
	runs := e2.waitRuns("m", 3)
	require.Len(t, runs, 3, "one skipped row and one catch-up run after the first run")
	catchup, missed := runs[0], runs[1]
	require.Equal(t, client.ScheduleRunStatusSkipped, missed.Status)
	require.Equal(t, client.ScheduleRunSkipReasonMissed, *missed.SkipReason)
	require.Equal(t, int64(3), missed.SkippedFires, "10:01, 10:02, 10:03")
	require.True(t, missed.ScheduledAt.Equal(time.Date(2026, 4, 1, 10, 1, 0, 0, time.UTC)))
	require.True(t, missed.LastScheduledAt.Equal(time.Date(2026, 4, 1, 10, 3, 0, 0, time.UTC)))
	require.Equal(t, client.ScheduleRunStatusQueued, catchup.Status)
	require.True(t, catchup.ScheduledAt.Equal(time.Date(2026, 4, 1, 10, 6, 0, 0, time.UTC)), "the latest missed fire runs")
	require.Equal(t, int64(2), catchup.CoalescedFires, "10:04 and 10:05 are folded into it")
	require.True(t, catchup.FiredAt.Equal(clk.Now()))

	// catchup all runs each fire inside the window: 10:04, 10:05, 10:06.
	all := e2.waitRuns("all", 5)
	require.Len(t, all, 5)
	for i, want := range []int{6, 5, 4} {
		require.Equal(t, client.ScheduleRunStatusQueued, all[i].Status)
		require.True(t, all[i].ScheduledAt.Equal(time.Date(2026, 4, 1, 10, want, 0, 0, time.UTC)), "run %d at %s", i, all[i].ScheduledAt)
	}
	require.Equal(t, int64(3), all[3].SkippedFires)

	// The next fire is the next minute; nothing more was made, and a
	// second restart makes nothing again.
	s := e2.schedule("m")
	require.True(t, s.NextFireAt.Equal(time.Date(2026, 4, 1, 10, 7, 0, 0, time.UTC)))
	nodes, err := e2.dispatcher().ListNodesWithResponse(context.Background(), &client.ListNodesParams{Type: ptr("m")})
	require.NoError(t, err)
	require.Len(t, nodes.JSON200.Items, 2)
}

// A schedule in New York fires across both daylight-saving changes of a
// year, once per day, as the documented rule says.
func TestScheduleFiresAcrossDST(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 3, 6, 12, 0, 0, 0, time.UTC))
	e, _ := startOn(t, t.TempDir(), clk)
	e.createSchedule(client.ScheduleCreate{ID: ptr("ny"), Cron: ptr("30 2 * * *"), Timezone: ptr("America/New_York"),
		Template: job("nightly"), CatchupWindowMS: ptr(int64(60000)), Overlap: ptr(client.ScheduleOverlapAllow)})
	s := e.schedule("ny")
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	want := []time.Time{
		time.Date(2026, 3, 7, 2, 30, 0, 0, ny),
		time.Date(2026, 3, 8, 3, 0, 0, 0, ny), // 02:30 does not exist: the end of the gap
		time.Date(2026, 3, 9, 2, 30, 0, 0, ny),
		time.Date(2026, 3, 10, 2, 30, 0, 0, ny),
		time.Date(2026, 3, 11, 2, 30, 0, 0, ny),
	}
	for i := range want {
		require.True(t, s.NextFires[i].Equal(want[i]), "fire %d: %s, want %s", i, s.NextFires[i], want[i].UTC())
	}
	for i := range 3 {
		runs := e.fireNext("ny")
		require.Len(t, runs, i+1)
		require.True(t, runs[0].ScheduledAt.Equal(want[i]), "run %d at %s", i, runs[0].ScheduledAt)
		require.Equal(t, client.ScheduleRunStatusQueued, runs[0].Status, "the run of %s", want[i])
	}

	// Fall back: 01:30 happens twice on 2026-11-01 and fires at the first.
	_, err = e.dispatcher().UpdateScheduleWithResponse(context.Background(), "ny", client.SchedulePatch{Cron: client.Value("30 1 * * *")})
	require.NoError(t, err)
	e.watchFires()
	e.advanceTo(time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC))
	e.waitFired("ny")
	require.Len(t, e.runs("ny"), 4, "the fires missed in between, skipped in one row")
	before := len(e.runs("ny"))
	for range 3 {
		e.fireNext("ny")
	}
	runs := e.runs("ny")
	require.Len(t, runs, before+3)
	got := []time.Time{runs[2].ScheduledAt, runs[1].ScheduledAt, runs[0].ScheduledAt}
	require.Equal(t, []time.Time{
		time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // 01:30 EDT, the first occurrence
		time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC), // 01:30 EST
		time.Date(2026, 11, 3, 6, 30, 0, 0, time.UTC),
	}, []time.Time{got[0].UTC(), got[1].UTC(), got[2].UTC()})
}

func TestScheduleOverlapModes(t *testing.T) {
	t.Parallel()
	e := start(t)
	mk := func(id string, o client.ScheduleOverlap) {
		e.createSchedule(client.ScheduleCreate{ID: ptr(id), Cron: ptr("* * * * *"), Template: job(id),
			Chain: &[]client.ScheduleNode{job(id + "-2")}, Overlap: &o})
	}
	mk("skip", client.ScheduleOverlapSkip)
	mk("queue", client.ScheduleOverlapQueue)
	mk("allow", client.ScheduleOverlapAllow)
	mk("buffer", client.ScheduleOverlapBufferOne)
	mk("cancel", client.ScheduleOverlapCancelOther)
	ids := []string{"skip", "queue", "allow", "buffer", "cancel"}
	// Three fires, a minute apart; no run is worked on, so none is over.
	for i := range 3 {
		e.watchFires()
		e.advanceTo(*e.schedule("skip").NextFireAt)
		e.waitFired(ids...)
		for _, id := range ids {
			s := e.schedule(id)
			require.True(t, s.LastRunSeq != nil && s.NextFireAt.After(e.clk.Now()), "fire %d of %s", i, id)
		}
	}

	// skip: one run, then the two fires skipped in one row.
	runs := e.runs("skip")
	require.Len(t, runs, 2)
	require.Equal(t, client.ScheduleRunStatusSkipped, runs[0].Status)
	require.Equal(t, client.ScheduleRunSkipReasonOverlap, *runs[0].SkipReason)
	require.Equal(t, int64(2), runs[0].SkippedFires)
	require.Equal(t, client.ScheduleRunStatusQueued, runs[1].Status)

	// queue: three runs, each waiting for the one before (its whole chain).
	runs = e.runs("queue")
	require.Len(t, runs, 3)
	for i := 0; i < 2; i++ {
		require.ElementsMatch(t, runs[i+1].Nodes, runs[i].After)
		n := e.node(*runs[i].NodeID)
		require.False(t, n.Ready)
		require.ElementsMatch(t, runs[i+1].Nodes, n.BlockedBy)
	}
	require.True(t, e.node(*runs[2].NodeID).Ready)

	// allow: three runs, all ready at once.
	runs = e.runs("allow")
	require.Len(t, runs, 3)
	for _, r := range runs {
		require.Empty(t, r.After)
		require.True(t, e.node(*r.NodeID).Ready)
	}

	// buffer_one: the second waits behind the first, the third is skipped.
	runs = e.runs("buffer")
	require.Len(t, runs, 3)
	require.Equal(t, client.ScheduleRunStatusSkipped, runs[0].Status)
	require.ElementsMatch(t, runs[2].Nodes, runs[1].After)
	require.False(t, e.node(*runs[1].NodeID).Ready)

	// cancel_other: each run cancelled the one before and its chain.
	runs = e.runs("cancel")
	require.Len(t, runs, 3)
	require.ElementsMatch(t, runs[1].Nodes, runs[0].Cancelled)
	require.ElementsMatch(t, runs[2].Nodes, runs[1].Cancelled)
	require.Equal(t, client.ScheduleRunStatusCancelled, runs[1].Status)
	require.Equal(t, client.ScheduleRunStatusCancelled, runs[2].Status)
	require.Equal(t, client.ScheduleRunStatusQueued, runs[0].Status)
	for _, id := range runs[2].Nodes {
		require.Equal(t, client.NodeStatusCancelled, e.node(id).Status)
	}

	// A failed run does not cancel the one queued behind it: once the
	// schedule sees it (at its next fire) the failed chain's stranded step is
	// cancelled, and the queued run becomes ready.
	runs = e.runs("queue")
	e.claimAnd(runs[2].Nodes[0], nil, "boom")
	require.Equal(t, client.ScheduleRunStatusFailed, e.runs("queue")[2].Status)
	e.fireNext("queue")
	require.Equal(t, client.NodeStatusCancelled, e.node(runs[2].Nodes[1]).Status)
	require.Equal(t, client.ScheduleRunStatusFailed, e.runs("queue")[3].Status)
	require.True(t, e.node(*runs[1].NodeID).Ready, "the next queued run runs after a failed one")
	require.Equal(t, int64(1), e.schedule("queue").ConsecutiveFailures)

	// skip: once the run is over, the next fire runs again.
	first := e.runs("skip")[1]
	e.claimAnd(first.Nodes[0], nil, "")
	e.claimAnd(first.Nodes[1], map[string]any{"ok": true}, "")
	after := e.fireNext("skip")
	require.Len(t, after, 3)
	require.Equal(t, client.ScheduleRunStatusQueued, after[0].Status)
}

// After consecutive failed runs the next fires wait 30 s, 1 min, 5 min ...
// (the ladder), and a run that ends done resets it.
func TestScheduleFailureBackoffLadder(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.createSchedule(client.ScheduleCreate{ID: ptr("flaky"), Cron: ptr("@every 10s"), Template: job("flaky")})
	fail := func() time.Time {
		runs := e.runs("flaky")
		require.Equal(t, client.ScheduleRunStatusQueued, runs[0].Status)
		e.claimAnd(*runs[0].NodeID, nil, "it broke")
		return e.clk.Now()
	}
	// tick moves to the next 10 s mark, where the loop wakes, and waits for
	// the record of that fire.
	tick := func() []client.ScheduleRun {
		e.watchFires()
		e.advanceTo(e.clk.Now().Truncate(10 * time.Second).Add(10 * time.Second))
		e.waitFired("flaky")
		return e.runs("flaky")
	}

	runs := e.fireNext("flaky")
	require.Len(t, runs, 1)
	end := fail()
	// The failure is taken in at once: the fires before end+30s are left out.
	s := e.schedule("flaky")
	require.Equal(t, int64(1), s.ConsecutiveFailures)
	require.True(t, s.BackoffUntil.Equal(end.Add(30*time.Second)), "backoff until %s", s.BackoffUntil)
	require.True(t, s.NextFireAt.Equal(end.Add(30*time.Second)), "next fire %s", s.NextFireAt)

	// The two fires inside the backoff are skipped (one row), then a run.
	runs = tick()
	require.Equal(t, client.ScheduleRunSkipReasonBackoff, *runs[0].SkipReason)
	require.Equal(t, int64(1), runs[0].SkippedFires)
	runs = tick()
	require.Equal(t, int64(2), runs[0].SkippedFires)
	runs = tick()
	require.Equal(t, client.ScheduleRunStatusQueued, runs[0].Status)
	require.True(t, runs[0].ScheduledAt.Equal(end.Add(30*time.Second)))

	// Then 1 min, 5 min, 15 min, 60 min, and 60 min again: the next run is
	// the first fire at or after the last failure's end + the step.
	for i, step := range []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, time.Hour} {
		end = fail()
		s = e.schedule("flaky")
		require.Equal(t, int64(i+2), s.ConsecutiveFailures)
		require.True(t, s.BackoffUntil.Equal(end.Add(step)), "failure %d: backoff until %s, want %s", i+2, s.BackoffUntil, end.Add(step))
		require.True(t, s.NextFireAt.Equal(end.Add(step)), "failure %d: next fire %s", i+2, s.NextFireAt)
		if i == 0 {
			for range 5 {
				runs = tick()
				require.Equal(t, client.ScheduleRunSkipReasonBackoff, *runs[0].SkipReason)
			}
			require.Equal(t, int64(5), runs[0].SkippedFires)
			runs = tick()
		} else {
			runs = e.fireNext("flaky")
		}
		require.Equal(t, client.ScheduleRunStatusQueued, runs[0].Status, "failure %d", i+2)
		require.True(t, runs[0].ScheduledAt.Equal(end.Add(step)), "failure %d: run at %s", i+2, runs[0].ScheduledAt)
	}

	// A run that ends done resets the ladder: the next fire is 10 s on.
	e.claimAnd(*e.runs("flaky")[0].NodeID, "fine", "")
	s = e.schedule("flaky")
	require.Equal(t, int64(0), s.ConsecutiveFailures)
	require.Nil(t, s.BackoffUntil)
	require.True(t, s.NextFireAt.Equal(e.clk.Now().Add(10*time.Second)))
	runs = tick()
	require.Equal(t, client.ScheduleRunStatusQueued, runs[0].Status)

	// A configured ladder.
	e.createSchedule(client.ScheduleCreate{ID: ptr("custom"), Cron: ptr("@every 10s"), Template: job("c"), BackoffMS: &[]int64{45000}})
	e.fireNext("custom")
	r := e.runs("custom")[0]
	e.claimAnd(*r.NodeID, nil, "no")
	end = e.clk.Now()
	require.True(t, e.schedule("custom").BackoffUntil.Equal(end.Add(45*time.Second)))
}

func TestSchedulePauseResumeTrigger(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	e.watchFiringLoop()
	created := e.createSchedule(client.ScheduleCreate{ID: ptr("p"), Cron: ptr("* * * * *"), Template: job("p")})
	e.waitFiringLoopIdle(*created.NextFireAt)

	res, err := d.PauseScheduleWithResponse(ctx, "p", client.ScheduleNote{Note: ptr("the API is down")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	s := *res.JSON200
	require.False(t, s.Enabled)
	require.Equal(t, "the API is down", *s.Note)
	require.Equal(t, "head", *s.PausedBy)
	require.True(t, s.PausedAt.Equal(e.clk.Now()))
	require.Empty(t, s.NextFires)
	require.Nil(t, s.NextFireAt)

	// Paused: fires pass and nothing is made. The loop wakes at the fire it
	// slept towards and finds nothing due.
	e.clk.Advance(3 * time.Minute)
	e.waitFiringLoopIdle(time.Time{})
	require.Empty(t, e.runs("p"))

	// Trigger runs it now, paused or not.
	tr, err := d.TriggerScheduleWithResponse(ctx, "p", client.ScheduleTrigger{})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, tr.StatusCode(), string(tr.Body))
	require.Equal(t, client.ScheduleRunTrigger("manual"), tr.JSON201.Trigger)
	require.Equal(t, "head", *tr.JSON201.By)
	require.True(t, tr.JSON201.ScheduledAt.Equal(e.clk.Now()))
	require.Equal(t, client.ScheduleRunStatusQueued, tr.JSON201.Status)
	require.Equal(t, "schedule:p", e.node(*tr.JSON201.NodeID).CreatedBy)

	// A second trigger while that run is not over: skip refuses it, and
	// nothing is made; an overlap override lets it through.
	tr2, err := d.TriggerScheduleWithResponse(ctx, "p", client.ScheduleTrigger{})
	require.NoError(t, err)
	requireProblem(t, tr2.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeConflict)
	require.Len(t, e.runs("p"), 1)
	tr3, err := d.TriggerScheduleWithResponse(ctx, "p", client.ScheduleTrigger{Overlap: ptr(client.ScheduleOverlapAllow)})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, tr3.StatusCode(), string(tr3.Body))
	require.Equal(t, int64(2), tr3.JSON201.Seq)

	// Resume: the next fire is the next minute from now, not a catch-up.
	rr, err := d.ResumeScheduleWithResponse(ctx, "p", client.ScheduleNote{Note: ptr("back up")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rr.StatusCode(), string(rr.Body))
	s = *rr.JSON200
	require.True(t, s.Enabled)
	require.Equal(t, "back up", *s.Note)
	require.Nil(t, s.PausedAt)
	require.True(t, s.NextFireAt.After(e.clk.Now()))
	require.True(t, s.NextFireAt.Sub(e.clk.Now()) <= time.Minute)
	runs := e.fireNext("p")
	require.Len(t, runs, 3)
	require.Equal(t, client.ScheduleRunSkipReasonOverlap, *runs[0].SkipReason, "the triggered runs are not over")

	// Pause and resume need a dispatcher; a reader may look.
	wr, err := e.user("w1", "worker").PauseScheduleWithResponse(ctx, "p", client.ScheduleNote{})
	require.NoError(t, err)
	requireProblem(t, wr.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
}

func TestScheduleRunsHistoryIsNewestFirstAndPaged(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.createSchedule(client.ScheduleCreate{ID: ptr("h"), Cron: ptr("* * * * *"), Template: job("h"), Overlap: ptr(client.ScheduleOverlapAllow)})
	for range 4 {
		e.fireNext("h")
	}
	runs := e.runs("h")
	require.Len(t, runs, 4)
	for i, r := range runs {
		require.Equal(t, int64(4-i), r.Seq)
	}
	// A done run and a failed one show what their nodes say.
	e.clk.Advance(1500 * time.Millisecond)
	e.claimAnd(*runs[3].NodeID, map[string]any{"rows": 42}, "")
	e.clk.Advance(2 * time.Second)
	e.claimAnd(*runs[2].NodeID, nil, "quota exceeded")
	runs = e.runs("h")
	done, failed := runs[3], runs[2]
	require.Equal(t, client.ScheduleRunStatusDone, done.Status)
	require.Equal(t, int64(1), done.Attempts)
	require.Equal(t, map[string]any{"rows": float64(42)}, done.Result)
	require.Nil(t, done.Error)
	require.NotNil(t, done.EndedAt)
	require.Equal(t, done.EndedAt.Sub(done.FiredAt).Milliseconds(), *done.DurationMS)
	require.Equal(t, client.ScheduleRunStatusFailed, failed.Status)
	require.Equal(t, "quota exceeded", *failed.Error)
	require.Equal(t, int64(1), failed.Attempts)
	require.Nil(t, failed.Result)
	require.NotNil(t, failed.DurationMS)
	require.Equal(t, client.ScheduleRunStatusQueued, runs[0].Status)
	require.Nil(t, runs[0].DurationMS)
	require.Nil(t, runs[0].EndedAt)

	// Pages of two.
	c := e.user("auditor", "reader")
	page, err := c.ListScheduleRunsWithResponse(context.Background(), "h", &client.ListScheduleRunsParams{Limit: ptr(2)})
	require.NoError(t, err)
	require.Equal(t, []int64{4, 3}, []int64{page.JSON200.Items[0].Seq, page.JSON200.Items[1].Seq})
	require.NotNil(t, page.JSON200.NextCursor)
	page, err = c.ListScheduleRunsWithResponse(context.Background(), "h", &client.ListScheduleRunsParams{Limit: ptr(2), Cursor: page.JSON200.NextCursor})
	require.NoError(t, err)
	require.Equal(t, []int64{2, 1}, []int64{page.JSON200.Items[0].Seq, page.JSON200.Items[1].Seq})
	require.Nil(t, page.JSON200.NextCursor)
	bad, err := c.ListScheduleRunsWithResponse(context.Background(), "h", &client.ListScheduleRunsParams{Cursor: ptr("bm9wZQ")})
	require.NoError(t, err)
	requireProblem(t, bad.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	missing, err := c.ListScheduleRunsWithResponse(context.Background(), "nope", nil)
	require.NoError(t, err)
	requireProblem(t, missing.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
}

// A chain runs step by step; cancelling a run's first node cancels its chain.
func TestScheduleChainRunsStepByStepAndCancelsWhole(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.createSchedule(client.ScheduleCreate{ID: ptr("etl"), Cron: ptr("@hourly"), Template: job("extract"),
		Chain: &[]client.ScheduleNode{job("transform"), job("load")}})
	d := e.dispatcher()
	tr, err := d.TriggerScheduleWithResponse(context.Background(), "etl", client.ScheduleTrigger{})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, tr.StatusCode(), string(tr.Body))
	steps := tr.JSON201.Nodes
	require.Len(t, steps, 3)
	require.Equal(t, []string{"extract", "transform", "load"}, []string{e.node(steps[0]).Type, e.node(steps[1]).Type, e.node(steps[2]).Type})
	require.True(t, e.node(steps[0]).Ready)
	require.Equal(t, []string{steps[0]}, e.node(steps[1]).BlockedBy)
	require.Equal(t, []string{steps[1]}, e.node(steps[2]).BlockedBy)

	// Step one done: step two is ready, the run is queued on it.
	e.claimAnd(steps[0], nil, "")
	require.True(t, e.node(steps[1]).Ready)
	require.Equal(t, client.ScheduleRunStatusQueued, e.runs("etl")[0].Status)

	// A second run, cancelled at its first node: the whole chain goes.
	tr2, err := d.TriggerScheduleWithResponse(context.Background(), "etl", client.ScheduleTrigger{Overlap: ptr(client.ScheduleOverlapAllow)})
	require.NoError(t, err)
	second := tr2.JSON201.Nodes
	cr, err := d.CancelNodeWithResponse(context.Background(), second[0], client.CancelRequest{Reason: ptr("not today")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, cr.StatusCode(), string(cr.Body))
	require.ElementsMatch(t, second, cr.JSON200.Cancelled)
	runs := e.runs("etl")
	require.Equal(t, client.ScheduleRunStatusCancelled, runs[0].Status)
	require.Equal(t, client.ScheduleRunStatusQueued, runs[1].Status, "the first run goes on")

	// The chain is at most 9 follow-ups deep (a run is at most 10 nodes).
	long := make([]client.ScheduleNode, 10)
	for i := range long {
		long[i] = job("step")
	}
	res, err := d.CreateScheduleWithResponse(context.Background(), client.ScheduleCreate{Cron: ptr("@hourly"), Template: job("x"), Chain: &long})
	require.NoError(t, err)
	requireProblem(t, res.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	require.Equal(t, "chain", *ptr(res.ApplicationProblemJSON400.Field))
}

// A one-shot schedule fires once at its instant and removes itself.
func TestScheduleOneShotRemovesItself(t *testing.T) {
	t.Parallel()
	e := start(t)
	at := e.clk.Now().Add(90 * time.Second).Truncate(time.Second)
	s := e.createSchedule(client.ScheduleCreate{ID: ptr("once"), At: &at, Template: job("once")})
	require.Nil(t, s.Cron)
	require.True(t, s.At.Equal(at))
	require.Equal(t, []time.Time{at}, []time.Time{s.NextFires[0]})
	require.Len(t, s.NextFires, 1)

	e.watchFires()
	e.advanceTo(at)
	e.waitFired("once")
	res, err := e.dispatcher().GetScheduleWithResponse(context.Background(), "once")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, res.StatusCode(), "a one-off schedule is gone once it fired")
	nodes, err := e.dispatcher().ListNodesWithResponse(context.Background(), &client.ListNodesParams{Type: ptr("once")})
	require.NoError(t, err)
	require.Len(t, nodes.JSON200.Items, 1)
	require.Equal(t, "schedule:once", nodes.JSON200.Items[0].CreatedBy)
}

// Bad input is a 400 problem naming the field, and changes nothing.
func TestScheduleBadInputIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("acme", "head", "dispatcher")
	e.createSchedule(client.ScheduleCreate{ID: ptr("keep"), Cron: ptr("@hourly"), Template: job("keep")})
	before := e.schedule("keep")
	past := e.clk.Now().Add(-time.Hour).Format(time.RFC3339)
	for _, tc := range []struct{ body, field string }{
		{`{"cron": "* * *", "template": {"type": "t"}}`, "cron"},
		{`{"cron": "61 * * * *", "template": {"type": "t"}}`, "cron"},
		{`{"cron": "@every 0s", "template": {"type": "t"}}`, "cron"},
		{`{"cron": "@every 500ms", "template": {"type": "t"}}`, "cron"},
		{`{"cron": "0 0 30 2 *", "template": {"type": "t"}}`, "cron"},
		{`{"cron": "TZ=Europe/Paris 0 9 * * *", "template": {"type": "t"}}`, "cron"},
		{`{"cron": "0 9 * * *", "timezone": "Mars/Olympus_Mons", "template": {"type": "t"}}`, "timezone"},
		{`{"cron": "0 9 * * *", "timezone": "Local", "template": {"type": "t"}}`, "timezone"},
		{`{"template": {"type": "t"}}`, "cron"},
		{`{"cron": "@hourly", "at": "2030-01-01T00:00:00Z", "template": {"type": "t"}}`, "at"},
		{`{"at": "` + past + `", "template": {"type": "t"}}`, "at"},
		{`{"cron": "@hourly"}`, "template"},
		{`{"cron": "@hourly", "template": {}}`, "template.type"},
		{`{"cron": "@hourly", "template": {"type": "t", "id": "fixed"}}`, "template.id"},
		{`{"cron": "@hourly", "template": {"type": "t", "depends_on": ["a"]}}`, "template.depends_on"},
		{`{"cron": "@hourly", "template": {"type": "t", "blobs": ["` + strings.Repeat("a", 64) + `"]}}`, "template.blobs"},
		{`{"cron": "@hourly", "template": {"type": "t", "max_attempts": 0}}`, "template.max_attempts"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "chain": [{"type": "u", "timeout_ms": 0}]}`, "chain[0].timeout_ms"},
		{`{"cron": "@hourly", "template": {"type": "t", "bogus": 1}}`, "template.bogus"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "overlap": "sometimes"}`, "overlap"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "catchup": "some"}`, "catchup"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "catchup_window_ms": 999}`, "catchup_window_ms"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "catchup_window_ms": 2678400001}`, "catchup_window_ms"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "jitter_ms": -1}`, "jitter_ms"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "jitter_ms": 3600001}`, "jitter_ms"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "jitter_ms": 99999999999999999999}`, "jitter_ms"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "backoff_ms": [1000, -1]}`, "backoff_ms[1]"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "backoff_ms": [604800001]}`, "backoff_ms[0]"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "backoff_ms": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}`, "backoff_ms"},
		{`{"id": "bad id", "cron": "@hourly", "template": {"type": "t"}}`, "id"},
		{`{"cron": "@hourly", "template": {"type": "t"}, "colour": "red"}`, "colour"},
	} {
		resp, body := e.raw(http.MethodPost, "/v1/schedules", tok, "application/json", tc.body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", tc.body, body)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		var p client.Problem
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, client.ProblemCodeBadRequest, p.Code)
		require.Equal(t, tc.field, p.Field, "%s: %s", tc.body, body)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"cron": "nope"}`, "cron"},
		{`{"timezone": "Nowhere/Else"}`, "timezone"},
		{`{"jitter_ms": 3600001}`, "jitter_ms"},
		{`{"catchup_window_ms": 0}`, "catchup_window_ms"},
		{`{"template": null}`, "template"},
		{`{"template": {"queue": ""}}`, "template.queue"},
		{`{"id": "other"}`, "id"},
		{`{"overlap": "never"}`, "overlap"},
	} {
		resp, body := e.raw(http.MethodPatch, "/v1/schedules/keep", tok, "application/json", tc.body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", tc.body, body)
		var p client.Problem
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, tc.field, p.Field, "%s: %s", tc.body, body)
	}
	resp, body := e.raw(http.MethodPost, "/v1/schedules/keep/pause", tok, "application/json", `{"note": "`+strings.Repeat("x", 1001)+`"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
	resp, body = e.raw(http.MethodPost, "/v1/schedules/keep/trigger", tok, "application/json", `{"overlap": "whenever"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))

	// Nothing changed: still one schedule, as it was, with no run.
	res, err := e.dispatcher().ListSchedulesWithResponse(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, res.JSON200.Items, 1)
	require.Equal(t, before, e.schedule("keep"))
	require.Empty(t, e.runs("keep"))
}

func TestSchedulePatchAndDelete(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	e.createSchedule(client.ScheduleCreate{ID: ptr("s"), Cron: ptr("@hourly"), Template: client.ScheduleNode{Type: "t", Queue: ptr("q"), Props: &map[string]any{"a": 1, "b": 2}}})
	res, err := d.UpdateScheduleWithResponse(ctx, "s", client.SchedulePatch{
		Cron: client.Value("*/10 * * * *"), Timezone: client.Value("Europe/Berlin"), JitterMS: client.Value(int64(5000)),
		Template: &map[string]any{"title": "new title", "props": map[string]any{"a": nil}},
		Overlap:  client.Value(client.ScheduleOverlapQueue), BackoffMS: client.Null[[]int64](),
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	s := *res.JSON200
	require.Equal(t, "*/10 * * * *", *s.Cron)
	require.Equal(t, "Europe/Berlin", s.Timezone)
	require.Equal(t, int64(5000), s.JitterMS)
	require.Equal(t, client.ScheduleOverlapQueue, s.Overlap)
	require.Equal(t, "new title", *s.Template.Title)
	require.Equal(t, "q", *s.Template.Queue, "the template is merged, not replaced")
	require.Equal(t, map[string]any{"b": float64(2)}, *s.Template.Props)
	require.Equal(t, int64(2), s.Version)
	// Jitter delays each fire by at most jitter_ms past a ten-minute mark.
	for _, f := range s.NextFires {
		off := f.Sub(f.Truncate(10 * time.Minute))
		require.True(t, off >= 0 && off <= 5*time.Second, "fire %s", f)
	}
	// null restores a default.
	res, err = d.UpdateScheduleWithResponse(ctx, "s", client.SchedulePatch{Timezone: client.Null[string](), JitterMS: client.Null[int64]()})
	require.NoError(t, err)
	require.Equal(t, "UTC", res.JSON200.Timezone)
	require.Equal(t, int64(0), res.JSON200.JitterMS)

	del, err := d.DeleteScheduleWithResponse(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode())
	del, err = d.DeleteScheduleWithResponse(ctx, "s")
	require.NoError(t, err)
	requireProblem(t, del.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
}

// Schedules are per tenant; changing them needs a dispatcher.
func TestSchedulesArePerTenantAndNeedADispatcher(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.createSchedule(client.ScheduleCreate{ID: ptr("mine"), Cron: ptr("@hourly"), Template: job("t")})
	other := e.as(e.token("globex", "boss", "dispatcher"))
	g, err := other.GetScheduleWithResponse(ctx, "mine")
	require.NoError(t, err)
	requireProblem(t, g.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	tr, err := other.TriggerScheduleWithResponse(ctx, "mine", client.ScheduleTrigger{})
	require.NoError(t, err)
	requireProblem(t, tr.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	l, err := other.ListSchedulesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, l.JSON200.Items)
	// The same id in another tenant is another schedule.
	_, err = other.CreateScheduleWithResponse(ctx, client.ScheduleCreate{ID: ptr("mine"), Cron: ptr("@daily"), Template: job("t")})
	require.NoError(t, err)
	require.Equal(t, "@hourly", *e.schedule("mine").Cron)

	w := e.user("w1", "worker")
	c, err := w.CreateScheduleWithResponse(ctx, client.ScheduleCreate{Cron: ptr("@hourly"), Template: job("t")})
	require.NoError(t, err)
	requireProblem(t, c.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	tw, err := w.TriggerScheduleWithResponse(ctx, "mine", client.ScheduleTrigger{})
	require.NoError(t, err)
	requireProblem(t, tw.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	r, err := e.user("auditor", "reader").GetScheduleWithResponse(ctx, "mine")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode())
}
