package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/tenancy"
)

// Node is one server of a cluster.
type Node struct {
	cfg Config
	log *slog.Logger
	// coord keeps the members and the shards' owners (etcd or PostgreSQL).
	coord    coordinator
	shards   []*shard
	resolver *tenancy.Resolver
	front    http.Handler
	metrics  *metrics
	proxies  sync.Map // owner URL -> *httputil.ReverseProxy
	id       atomic.Pointer[string]
	// leaseUntil is when this server's session is surely still alive in
	// the store (unix nanoseconds; see lease.go): a shard is served here
	// only before it.
	leaseUntil atomic.Int64
	// sess is the current session (nil before the first).
	sess atomic.Pointer[session]
	// leaving is set when Shutdown begins: /ready answers 503 and the
	// shards served here go to other servers.
	leaving atomic.Bool
	// lastRequest is when the front last received an API request (unix
	// nanoseconds; probes do not count): Shutdown keeps answering until
	// requests stop coming.
	lastRequest atomic.Int64

	viewMu sync.Mutex
	cur    *view

	ctx    context.Context // ends when Shutdown begins: stop campaigning
	cancel context.CancelFunc
	done   chan struct{} // the session loop has ended
	// stopWatch ends the watches of the view, last in Shutdown.
	stopWatch context.CancelFunc

	httpMu sync.Mutex
	http   *http.Server

	shutdownMu sync.Mutex
	shutDown   bool // Shutdown has completed
	// metricsHTTP serves every series on a listener of its own
	// (ServeMetrics).
	metricsHTTP *http.Server
}

// Open joins the cluster: it checks the shard count, starts a session,
// registers this server as a member and starts campaigning. It returns once
// this server is a member; its shards come (and go) in the background.
func Open(ctx context.Context, cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	resolver, err := tenancy.NewResolver(cfg.Server.Tenant, cfg.Server.Clock)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger, resolver: resolver, done: make(chan struct{})}
	if cfg.Client != nil {
		n.coord = newEtcdCoordinator(cfg)
	} else if n.coord, err = newPostgresCoordinator(cfg); err != nil {
		return nil, err
	}
	n.cur = &view{members: map[string]string{}, owners: make([]owner, cfg.Shards), orphanSince: make([]time.Time, cfg.Shards), changed: make(chan struct{})}
	for k := range cfg.Shards {
		n.shards = append(n.shards, &shard{k: k, n: n})
	}
	if err := n.coord.checkShards(ctx, cfg.Shards); err != nil {
		n.coord.close()
		return nil, err
	}
	sess, err := n.join(ctx)
	if err != nil {
		n.coord.close()
		return nil, err
	}
	n.metrics = newMetrics(n)
	n.front = n.handler()
	n.metricsHTTP = server.MetricsHTTP(n.metrics.full, n.log)
	n.ctx, n.cancel = context.WithCancel(context.Background())
	wctx, stopWatch := context.WithCancel(context.Background())
	n.stopWatch = stopWatch
	go n.coord.watch(wctx, n.publish)
	go n.run(sess)
	n.log.Info("joined the cluster", "id", n.ID(), "advertise", cfg.Advertise, "shards", cfg.Shards, "store", n.coord.store())
	return n, nil
}

// join starts a session and registers this server as a member on it.
func (n *Node) join(ctx context.Context) (session, error) {
	sess, err := n.coord.join(ctx, n.cfg.Advertise, n.leaving.Load(), n.renewed)
	if err != nil {
		return nil, err
	}
	id := sess.id()
	n.id.Store(&id)
	n.sess.Store(&sess)
	return sess, nil
}

// run serves the shards on sess and, when a session ends under it (it
// expired or was revoked), closes every shard and joins again, until
// Shutdown.
func (n *Node) run(sess session) {
	defer close(n.done)
	for {
		sctx, cancel := context.WithCancel(n.ctx)
		var wg sync.WaitGroup
		for _, s := range n.shards {
			wg.Go(func() { s.run(sctx, sess) })
		}
		select {
		case <-sess.done():
			n.log.Warn("the session ended; closing this server's shards and joining again", "id", n.ID(), "store", n.coord.store())
		case <-n.ctx.Done():
		}
		cancel()
		wg.Wait()
		// Ending the session removes the member and every shard it owns at
		// once, so the other servers take over without waiting for it to
		// expire.
		if n.ctx.Err() != nil {
			if err := sess.end(n.cfg.LeaseTTL); err != nil {
				n.log.Warn("error ending the session; it expires by itself", "err", err)
			}
			return
		}
		if sess.end(time.Second) != nil {
			// The store may not answer now, and a session outlives that: it
			// would hold the shards for a TTL after the store is back.
			go n.endUntilGone(sess)
		}
		for {
			if n.ctx.Err() != nil {
				return
			}
			ctx, cancel := context.WithTimeout(n.ctx, n.cfg.LeaseTTL)
			s, err := n.join(ctx)
			cancel()
			if err == nil {
				sess = s
				n.log.Info("joined the cluster again", "id", n.ID())
				break
			}
			n.log.Warn("error joining the cluster; retrying", "err", err)
			sleep(n.ctx, 500*time.Millisecond)
		}
	}
}

// endUntilGone ends a session that ended under this server once the store
// answers, until Shutdown.
func (n *Node) endUntilGone(sess session) {
	for n.ctx.Err() == nil {
		if sess.end(time.Second) == nil {
			return
		}
		sleep(n.ctx, time.Second)
	}
}

// ID is this server's id in the cluster: its session's (on etcd, the lease
// id in hex); it changes when a session ends and a new one starts.
func (n *Node) ID() string { return *n.id.Load() }

// ShardOf is the shard of tenant t.
func (n *Node) ShardOf(t string) int { return ShardOfTenant(t, n.cfg.Shards) }

// Owned lists the shards served here, in order.
func (n *Node) Owned() []int {
	var out []int
	for _, s := range n.shards {
		if s.inst.Load() != nil {
			out = append(out, s.k)
		}
	}
	return out
}

// localCount is how many shards are served here.
func (n *Node) localCount() int {
	c := 0
	for _, s := range n.shards {
		if s.inst.Load() != nil {
			c++
		}
	}
	return c
}

// ShardServer is the server of tenant t's shard when it is served here (nil
// when not).
func (n *Node) ShardServer(t string) *server.Server {
	if inst := n.shards[n.ShardOf(t)].inst.Load(); inst != nil {
		return inst.srv
	}
	return nil
}

// WaitSettled waits until this server is a live member, every shard has an
// owner that is its desired owner, and the shards this server owns are open
// here: the cluster has converged, as far as this server sees.
func (n *Node) WaitSettled(ctx context.Context) error {
	ok := n.waitFor(ctx, func(v *view) (bool, time.Time) {
		return n.settled(v), time.Now().Add(100 * time.Millisecond)
	})
	if !ok {
		return fmt.Errorf("the cluster did not settle: %w", ctx.Err())
	}
	return nil
}

func (n *Node) settled(v *view) bool {
	id := n.ID()
	if _, member := v.members[id]; !member {
		return false
	}
	for k, o := range v.owners {
		d, _ := v.desired(k)
		if o.id == "" || o.id != d {
			return false
		}
		if o.id == id && n.shards[k].inst.Load() == nil {
			return false
		}
	}
	return true
}

// Handler is the front: every request of the API, served here or passed to
// the server that owns its tenant's shard.
func (n *Node) Handler() http.Handler { return n.front }

// Serve answers requests on l with Handler until Shutdown.
func (n *Node) Serve(l net.Listener) error {
	n.httpMu.Lock()
	if n.http == nil {
		n.http = &http.Server{
			Handler:           n.front,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       60 * time.Second,
			// Long polls (up to 60 s) must fit inside the write timeout.
			WriteTimeout: 90 * time.Second,
			IdleTimeout:  120 * time.Second,
			ErrorLog:     slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
		}
	}
	srv := n.http
	n.httpMu.Unlock()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ServeMetrics answers GET /metrics with every series, the per-tenant ones
// included, on l (TETHER_METRICS_ADDR) until Shutdown.
func (n *Node) ServeMetrics(l net.Listener) error {
	err := n.metricsHTTP.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown hands every shard over and leaves: /ready answers 503 at once,
// the shards served here go one by one to their next owners (each drained,
// then resigned, with the next owner already campaigning), the session is
// revoked, and the front, which until then passes requests on to the new
// owners, stops once requests have stopped coming (quietPeriod, handoverWait
// at most).
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutdownMu.Lock()
	defer n.shutdownMu.Unlock()
	if n.shutDown {
		return nil
	}
	err := n.shutdown(ctx)
	n.shutDown = err == nil
	return err
}

func (n *Node) shutdown(ctx context.Context) error {
	defer n.stopWatch()
	defer n.metricsHTTP.Close() // scrapes are short: nothing to drain
	n.leave(ctx)
	n.cancel()
	select {
	case <-n.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	n.coord.close() // every shard is closed
	n.httpMu.Lock()
	srv := n.http
	n.httpMu.Unlock()
	if srv == nil {
		return nil
	}
	// Requests still arriving go on to the shards' new owners: give them
	// a moment (handoverWait at most) to be elected, and the load balancer
	// and the other servers a moment to stop sending here.
	wctx, cancel := context.WithTimeout(ctx, handoverWait)
	defer cancel()
	n.waitFor(wctx, func(v *view) (bool, time.Time) {
		for _, o := range v.owners {
			if _, live := v.members[o.id]; !live {
				return false, time.Time{}
			}
		}
		return true, time.Time{}
	})
	n.waitQuiet(wctx)
	return srv.Shutdown(ctx)
}

// leave marks this server leaving in the store, so that every server (this one
// included) stops counting it among the shards' desired owners: each shard
// served here is handed over as when a new server joins, its next owner
// campaigning already. It returns once this server owns no shard, or when
// that takes longer than closing and resigning can (the shards then go
// with the session, as when the mark cannot be written).
func (n *Node) leave(ctx context.Context) {
	if n.leaving.Swap(true) {
		return
	}
	sess := *n.sess.Load()
	id := sess.id()
	pctx, cancel := context.WithTimeout(ctx, n.cfg.LeaseTTL)
	err := sess.markLeaving(pctx)
	cancel()
	if err != nil {
		n.log.Warn("error marking this server leaving; its shards go with its session", "err", err)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, n.cfg.DrainTimeout+2*n.cfg.LeaseTTL)
	defer cancel()
	if !n.waitFor(wctx, func(v *view) (bool, time.Time) {
		for _, s := range n.shards {
			if v.owners[s.k].id == id || s.inst.Load() != nil {
				return false, time.Time{}
			}
		}
		return true, time.Time{}
	}) {
		n.log.Warn("some shards were not handed over before the server stopped; they go with its session", "shards", n.Owned())
	}
}

// quietPeriod is how long no API request must have come before a stopping
// server closes its front: closing drops idle connections, and a server
// whose view is behind could be sending a request on one at that moment.
const quietPeriod = time.Second

// waitQuiet waits until the front has received no request for quietPeriod,
// or ctx ends.
func (n *Node) waitQuiet(ctx context.Context) {
	for {
		quietAt := time.Unix(0, n.lastRequest.Load()).Add(quietPeriod)
		if !time.Now().Before(quietAt) {
			return
		}
		sleep(ctx, time.Until(quietAt))
		if ctx.Err() != nil {
			return
		}
	}
}

// handoverWait bounds how long a request waits for its shard to be served
// again (an election, a hand-over, or the owner it was passed to not yet
// serving it), and how long Shutdown waits for other servers to take over.
// A planned hand-over (drain, resign, elect, open the shard from the store)
// takes well under a second on an idle machine and was seen to take over
// 5 s on a shared 2-core one under the race detector; a request should wait
// it out rather than fail.
const handoverWait = 10 * time.Second

// orphanWait bounds how long a request waits while its shard has no owner
// it can reach: an election, or a takeover from a server that died (which
// takes a lease TTL), is in progress.
const orphanWait = 2 * time.Second
