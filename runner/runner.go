package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-run/tether/client"
)

// Runner is a configured runner; Run runs it once.
type Runner struct {
	cfg  Config
	api  *client.ClientWithResponses
	log  *slog.Logger
	meta map[string]any

	// stopping ends when the runner stops claiming (Stop, Run's context, or
	// a fatal answer from the server); killing when running handlers must
	// stop (the grace has passed, or Kill).
	stopping, killing context.Context
	stop, kill        context.CancelFunc
	slots             []*slot
	// base is Run's context without its cancellation: handlers' contexts
	// carry its values.
	base    context.Context
	started atomic.Bool

	mu    sync.Mutex
	fatal error // the first error that stopped the runner
}

// Run runs a runner of cfg until ctx ends (then as Stop) or a fatal error
// stops it; see Runner.Run.
func Run(ctx context.Context, cfg Config) error {
	r, err := New(cfg)
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

// New checks cfg and makes a runner of it.
func New(cfg Config) (*Runner, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			MaxIdleConnsPerHost: 2*cfg.Slots + 2,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	api, err := client.NewClientWithResponses(cfg.Server, client.WithHTTPClient(hc), client.WithBearerToken(cfg.Token),
		client.WithRetries(cfg.Retries))
	if err != nil {
		return nil, fmt.Errorf("error making a client for %s: %w", cfg.Server, err)
	}
	host, _ := os.Hostname()
	meta := map[string]any{}
	for k, v := range cfg.Meta {
		meta[k] = v
	}
	meta["host"], meta["pid"], meta["queue"] = host, os.Getpid(), cfg.Queue
	r := &Runner{cfg: cfg, api: api, log: cfg.Logger.With("queue", cfg.Queue), meta: meta}
	r.stopping, r.stop = context.WithCancel(context.Background())
	r.killing, r.kill = context.WithCancel(context.Background())
	for i := 1; i <= cfg.Slots; i++ {
		r.slots = append(r.slots, newSlot(r, fmt.Sprintf("%s-%d", cfg.WorkerName, i)))
	}
	return r, nil
}

// Stop makes the runner stop claiming; running handlers have the grace to
// finish. It does not wait: Run returns when they have.
func (r *Runner) Stop() { r.stop() }

// Kill ends the grace: the contexts of running handlers are cancelled now.
func (r *Runner) Kill() {
	r.stop()
	r.kill()
}

// Run claims and runs nodes until ctx ends or Stop is called, then waits up
// to the grace for running handlers, cancels the contexts of those still
// running, releases their nodes, reports its slots offline, and returns. It
// returns nil after a stop and the cause after a fatal error (the server
// refused a claim for good: a bad token, a bad queue). A runner runs once.
func (r *Runner) Run(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return errors.New("runner: Run was called twice")
	}
	r.base = context.WithoutCancel(ctx)
	defer r.kill()
	go func() {
		select {
		case <-ctx.Done():
			r.stop()
		case <-r.stopping.Done():
		}
		grace := time.NewTimer(r.cfg.Grace)
		defer grace.Stop()
		select {
		case <-grace.C:
			if r.running() {
				r.log.Info("grace is over: stopping the handlers still running")
			}
		case <-r.killing.Done():
		}
		r.kill()
	}()

	r.log.Info("runner started", "slots", r.cfg.Slots, "ttl", r.cfg.TTL.String(), "server", r.cfg.Server)
	var wg sync.WaitGroup
	for _, s := range r.slots {
		wg.Go(s.run)
	}
	wg.Wait()
	if err := r.fatalErr(); err != nil {
		return err
	}
	r.log.Info("runner stopped")
	return nil
}

// failed stops the runner because of err, which becomes its exit error.
func (r *Runner) failed(err error) {
	r.mu.Lock()
	if r.fatal == nil {
		r.fatal = err
		r.log.Error("stopping", "err", err)
	}
	r.mu.Unlock()
	r.stop()
}

func (r *Runner) fatalErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fatal
}

// running reports whether any slot runs a handler.
func (r *Runner) running() bool {
	for _, s := range r.slots {
		if s.busy.Load() {
			return true
		}
	}
	return false
}
