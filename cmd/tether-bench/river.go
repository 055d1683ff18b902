package main

// River (github.com/riverqueue/river), a Go job queue on PostgreSQL, run as
// a library in this process on the same PostgreSQL as Tether, in a schema
// of its own (riverSchema), as the reference of -vs-river:
//
//   - riverBurnDown, beside Tether's (b): -preload-batched jobs inserted with
//     InsertMany, then a client tuned for throughput as River's own `river
//     bench` tunes it (cmd/river/riverbench: FetchCooldown 2 ms,
//     FetchPollInterval 20 ms, MaxWorkers 2000; at its defaults of 100 ms
//     and 1 s it caps at a few hundred jobs/s); the rate is the jobs over the
//     time from the client's start to the last completion, as River's bench
//     reports it.
//   - riverFewWorkers, beside Tether's (a): the same tuning with MaxWorkers
//     -c, so that River holds at most as many jobs at once as (a)'s clients
//     (each holds one); -preload jobs, and the rate is the completions in a
//     window of -d after -warmup, as (a) measures.
//
// A job counts when River's subscription reports it completed: that is
// after River's completer wrote it, as River's bench counts.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

const (
	// riverSchema holds River's tables, beside Tether's in the same database.
	riverSchema = "tether_bench_river"

	// River's own benchmark's tuning (cmd/river/riverbench).
	riverFetchCooldown     = 2 * time.Millisecond
	riverFetchPollInterval = 20 * time.Millisecond
	riverBenchMaxWorkers   = 2000

	// riverInsertBatch is the jobs of one InsertMany, as River's bench.
	riverInsertBatch = 5000
)

// riverArgs is the benchmark's job: it does nothing, as River's bench job.
type riverArgs struct {
	Num int `json:"num"`
}

func (riverArgs) Kind() string { return "tether_bench" }

type riverWorker struct {
	river.WorkerDefaults[riverArgs]
}

func (riverWorker) Work(context.Context, *river.Job[riverArgs]) error { return nil }

// riverBench is River on the run's PostgreSQL.
type riverBench struct {
	cfg  config
	pool *pgxpool.Pool
}

// openRiver connects to url and migrates River's schema to its latest version.
func openRiver(ctx context.Context, cfg config, url string) (*riverBench, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("error connecting River to PostgreSQL: %w", err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+riverSchema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error creating River's schema: %w", err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: riverSchema, Logger: quietLogger()})
	if err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error migrating River's schema: %w", err)
	}
	return &riverBench{cfg: cfg, pool: pool}, nil
}

func (r *riverBench) close() { r.pool.Close() }

// drop removes River's schema (kept with -keep).
func (r *riverBench) drop(ctx context.Context) error {
	if r.cfg.keep {
		return nil
	}
	_, err := r.pool.Exec(ctx, "DROP SCHEMA "+riverSchema+" CASCADE")
	return err
}

// quietLogger keeps River's warnings and errors on stderr.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// riverRun is one River measurement: a fresh jobs table, n jobs inserted, a
// client with maxWorkers, and every completion's time.
type riverRun struct {
	client    *river.Client[pgx.Tx]
	done      atomic.Int64
	last      atomic.Int64 // unix nanoseconds of the latest completion
	inWindow  atomic.Int64
	win       window // set before the client starts, read by the counter after
	allDone   chan struct{}
	insertDur time.Duration
	n         int
}

// prepare truncates River's jobs, inserts n jobs with InsertMany and makes
// (but does not start) a client with maxWorkers that counts completions.
func (r *riverBench) prepare(ctx context.Context, n, maxWorkers int) (*riverRun, func(), error) {
	if _, err := r.pool.Exec(ctx, "TRUNCATE "+riverSchema+".river_job"); err != nil {
		return nil, nil, fmt.Errorf("error emptying River's jobs: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverWorker{})
	client, err := river.NewClient(riverpgxv5.New(r.pool), &river.Config{
		FetchCooldown:     riverFetchCooldown,
		FetchPollInterval: riverFetchPollInterval,
		Logger:            quietLogger(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Schema:            riverSchema,
		Workers:           workers,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("error making River's client: %w", err)
	}
	run := &riverRun{client: client, allDone: make(chan struct{}), n: n}
	began := time.Now()
	params := make([]river.InsertManyParams, 0, riverInsertBatch)
	for i := 0; i < n; {
		params = params[:0]
		for ; i < n && len(params) < riverInsertBatch; i++ {
			params = append(params, river.InsertManyParams{Args: riverArgs{Num: i}})
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return nil, nil, fmt.Errorf("error inserting River's jobs: %w", err)
		}
	}
	run.insertDur = time.Since(began)
	// A channel as long as the backlog: River drops an event that does not
	// fit, and a dropped completion would never be counted.
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: n,
		Kinds:    []river.EventKind{river.EventKindJobCompleted},
	})
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for ev := range events {
			if ev == nil {
				return
			}
			now := time.Now()
			run.last.Store(now.UnixNano())
			if run.win.has(now) {
				run.inWindow.Add(1)
			}
			if run.done.Add(1) == int64(n) {
				close(run.allDone)
			}
		}
	}()
	stop := func() {
		// Stop's context bounds the wait for River's jobs in hand.
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := client.Stop(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "River: error stopping the client:", err)
		}
		cancel()
		<-counted
	}
	return run, stop, nil
}

// riverBurnDown is River's figure beside Tether's (b).
func (r *riverBench) riverBurnDown(ctx context.Context) (*result, error) {
	n := r.cfg.preloadBatched
	run, stop, err := r.prepare(ctx, n, riverBenchMaxWorkers)
	if err != nil {
		return nil, err
	}
	res := newResult("river-b", riverBenchMaxWorkers)
	meter := startCPU()
	began := time.Now()
	if err := run.client.Start(ctx); err != nil {
		stop()
		return nil, fmt.Errorf("error starting River's client: %w", err)
	}
	timeout := time.After(burnDownTimeout)
	select {
	case <-run.allDone:
	case <-timeout:
	}
	u := meter.read()
	stop()
	done := run.done.Load()
	took := time.Unix(0, run.last.Load()).Sub(began)
	if done < int64(n) {
		res.note("RIVER DID NOT FINISH: %d of %d jobs completed within %v", done, n, burnDownTimeout)
	}
	res.fill(done, took, newRecorder())
	res.WallS = round3(time.Since(began).Seconds())
	res.note("River %s as a library on the same PostgreSQL (schema %s): burn-down of %d jobs inserted with InsertMany in %.2fs; rate over client start → last completion",
		riverVersion(), riverSchema, n, run.insertDur.Seconds())
	res.note("River's bench tuning: MaxWorkers %d, FetchCooldown %v, FetchPollInterval %v", riverBenchMaxWorkers, riverFetchCooldown, riverFetchPollInterval)
	riverCPUNote(res, u)
	return res, nil
}

// riverFewWorkers is River's figure beside Tether's (a).
func (r *riverBench) riverFewWorkers(ctx context.Context) (*result, error) {
	n, workers := r.cfg.preload, r.cfg.clients
	run, stop, err := r.prepare(ctx, n, workers)
	if err != nil {
		return nil, err
	}
	res := newResult("river-a", workers)
	now := time.Now()
	run.win = window{start: now.Add(r.cfg.warmup), end: now.Add(r.cfg.warmup + r.cfg.duration)}
	if err := run.client.Start(ctx); err != nil {
		stop()
		return nil, fmt.Errorf("error starting River's client: %w", err)
	}
	time.Sleep(time.Until(run.win.start))
	meter := startCPU()
	span := r.cfg.duration
	select {
	case <-run.allDone:
		span = time.Unix(0, run.last.Load()).Sub(run.win.start)
		res.note("RIVER RAN DRY %.2fs into the window: rate is over that span; raise -preload", span.Seconds())
	case <-time.After(time.Until(run.win.end)):
	}
	u := meter.read()
	stop()
	if span <= 0 {
		res.note("RIVER RAN DRY during warm-up: raise -preload")
	}
	res.fill(run.inWindow.Load(), max(span, 0), newRecorder())
	res.WallS = round3(time.Since(now).Seconds())
	res.note("River %s as a library on the same PostgreSQL (schema %s): %d jobs inserted with InsertMany in %.2fs; MaxWorkers %d (at most as many jobs in hand as (a)'s clients), FetchCooldown %v, FetchPollInterval %v",
		riverVersion(), riverSchema, n, run.insertDur.Seconds(), workers, riverFetchCooldown, riverFetchPollInterval)
	riverCPUNote(res, u)
	return res, nil
}

// burnDownTimeout bounds River's burn-down.
const burnDownTimeout = 10 * time.Minute

// riverVersion is the version of River the harness was built with.
func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/riverqueue/river" {
				return d.Version
			}
		}
	}
	return "(version unknown)"
}

// riverCPUNote: River runs in this process, so its CPU is the harness's;
// PostgreSQL's is in "other processes".
func riverCPUNote(r *result, u usage) {
	r.note("CPU in the window: River (this process) %.2fs, other processes (PostgreSQL, noise) %.2fs", u.client, u.other)
}
