package cluster

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-run/tether/internal/server"
)

// shard is one shard as this server sees it.
type shard struct {
	k    int
	n    *Node
	inst atomic.Pointer[instance] // the shard's server when open here
}

// instance is one opening of a shard's server here.
type instance struct {
	srv     *server.Server
	deposed chan struct{} // closed when the store's guard failed

	mu       sync.Mutex
	inflight int
	closing  bool
	drained  chan struct{} // closed when closing and no request is in flight
}

// acquire counts a request in, unless the instance is closing.
func (i *instance) acquire() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closing {
		return false
	}
	i.inflight++
	return true
}

// release counts a request out.
func (i *instance) release() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.inflight--
	if i.closing && i.inflight == 0 {
		close(i.drained)
	}
}

// drain refuses new requests and returns a channel closed when the ones in
// flight are done.
func (i *instance) drain() <-chan struct{} {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.closing {
		i.closing = true
		if i.inflight == 0 {
			close(i.drained)
		}
	}
	return i.drained
}

// Why a shard stops being served here.
type stopReason int

const (
	stopSession stopReason = iota // the session ended or the server is stopping
	stopHandoff                   // another live member is the desired owner
	stopBroken                    // the store broke (a failed commit, a failed guard)
)

// run campaigns for the shard while it is wanted here and serves it while
// elected, until ctx (the session's) ends.
func (s *shard) run(ctx context.Context, sess session) {
	id := sess.id()
	for ctx.Err() == nil {
		if !s.n.waitFor(ctx, func(v *view) (bool, time.Time) { return s.wanted(v, id) }) {
			return
		}
		if t := s.campaign(ctx, sess, id); t != nil {
			s.own(ctx, t, id)
		}
	}
}

// wanted says whether this server (id) should campaign for the shard: it
// owns it already, or is its desired owner, or the shard has had no owner
// for a lease TTL (then anyone takes it but a server that is leaving). again
// is when an orphan becomes old enough.
func (s *shard) wanted(v *view, id string) (ok bool, again time.Time) {
	o := v.owners[s.k]
	if o.id == id {
		return true, time.Time{}
	}
	if v.leaving[id] || s.n.leaving.Load() {
		return false, time.Time{}
	}
	if _, member := v.members[id]; member {
		if d, _ := v.desired(s.k); d == id {
			return true, time.Time{}
		}
	}
	if o.id == "" && !v.orphanSince[s.k].IsZero() {
		at := v.orphanSince[s.k].Add(s.n.cfg.LeaseTTL)
		return !time.Now().Before(at), at
	}
	return false, time.Time{}
}

// campaign waits to be elected; it gives up (nil) when the shard is no
// longer wanted here.
func (s *shard) campaign(ctx context.Context, sess session, id string) term {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if s.n.waitFor(cctx, func(v *view) (bool, time.Time) {
			ok, _ := s.wanted(v, id)
			return !ok, time.Time{}
		}) {
			cancel()
		}
	}()
	t, err := sess.campaign(cctx, s.k)
	if err != nil {
		if cctx.Err() == nil {
			s.n.log.Warn("error campaigning for a shard; retrying", "shard", s.k, "err", err)
			sleep(ctx, 500*time.Millisecond)
		}
		return nil
	}
	return t
}

// own serves the shard this server was just elected for until it must stop,
// then closes it, and resigns when handing it over.
func (s *shard) own(ctx context.Context, t term, id string) {
	s.n.log.Info("elected owner of a shard", "shard", s.k, "id", id, "term", t.number())
	s.n.metrics.elected.Inc()
	for {
		inst, err := s.open(ctx, t)
		if err != nil {
			// The session ended or the election is lost: resigning is
			// harmless either way.
			s.resign(t)
			return
		}
		reason := s.serve(ctx, inst, id)
		s.close(inst)
		switch reason {
		case stopSession:
			return // the session's end (or revocation) deletes the key
		case stopHandoff:
			s.n.log.Info("handing a shard over to its desired owner", "shard", s.k)
			s.resign(t)
			// Wait until the view no longer names this server, so that run
			// does not take the shard straight back.
			s.n.waitFor(ctx, func(v *view) (bool, time.Time) { return v.owners[s.k].id != id, time.Time{} })
			return
		case stopBroken:
			if s.current(ctx, t) {
				s.n.log.Warn("a shard's store broke; opening it again", "shard", s.k)
				continue
			}
			s.n.log.Warn("a shard's store broke and this server is no longer its owner", "shard", s.k)
			s.resign(t)
			return
		}
	}
}

// open opens the shard's store and server, retrying while this server is
// still the owner.
func (s *shard) open(ctx context.Context, t term) (*instance, error) {
	wait := 100 * time.Millisecond
	for {
		inst, err := s.openOnce(ctx, t)
		if err == nil {
			return inst, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.n.log.Warn("error opening a shard; retrying", "shard", s.k, "err", err)
		sleep(ctx, wait)
		wait = min(2*wait, 2*time.Second)
		if !s.current(ctx, t) {
			return nil, errors.New("no longer the owner")
		}
	}
}

func (s *shard) openOnce(ctx context.Context, t term) (*instance, error) {
	deposed := make(chan struct{})
	var once sync.Once
	store, err := t.openStore(s.n.log.With("shard", s.k), func() { once.Do(func() { close(deposed) }) })
	if err != nil {
		return nil, err
	}
	cfg := s.n.cfg.Server
	cfg.KV, cfg.DataDir, cfg.InMemory = store, "", false
	cfg.Logger = s.n.log.With("shard", s.k)
	if cfg.BlobDir != "" {
		cfg.BlobDir = filepath.Join(cfg.BlobDir, "shard-"+shardName(s.k))
	}
	srv, err := server.Open(ctx, cfg)
	if err != nil {
		_ = store.Close() // closed already unless server.Open failed before opening the graph
		return nil, err
	}
	srv.API.SetReady(true)
	inst := &instance{srv: srv, deposed: deposed, drained: make(chan struct{})}
	s.inst.Store(inst)
	s.n.publish(func(*view) {})
	s.n.log.Info("serving a shard", "shard", s.k)
	return inst, nil
}

// serve waits until the shard must stop being served here.
func (s *shard) serve(ctx context.Context, inst *instance, id string) stopReason {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		v := s.n.view()
		if _, member := v.members[id]; member {
			if d, _ := v.desired(s.k); d != id {
				return stopHandoff
			}
		}
		select {
		case <-ctx.Done():
			return stopSession
		case <-inst.deposed:
			return stopBroken
		case <-tick.C:
			if !inst.srv.Store.Healthy() {
				return stopBroken
			}
		case <-v.changed:
		}
	}
}

// close stops serving the shard here: new requests wait for (or go to) the
// next owner, long polls and streams end, the requests in flight finish
// (DrainTimeout at most) and the server shuts down.
func (s *shard) close(inst *instance) {
	s.inst.Store(nil)
	s.n.publish(func(*view) {})
	inst.srv.API.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), s.n.cfg.DrainTimeout)
	defer cancel()
	select {
	case <-inst.drain():
	case <-ctx.Done():
		s.n.log.Warn("closing a shard with requests still in flight", "shard", s.k)
	}
	if err := inst.srv.Shutdown(ctx); err != nil {
		s.n.log.Warn("error closing a shard", "shard", s.k, "err", err)
	}
	s.n.log.Info("closed a shard", "shard", s.k)
}

// current says whether the term is still this server's (false when the
// store cannot tell).
func (s *shard) current(ctx context.Context, t term) bool {
	ctx, cancel := context.WithTimeout(ctx, s.n.cfg.LeaseTTL)
	defer cancel()
	return t.current(ctx)
}

// resign gives the shard up.
func (s *shard) resign(t term) {
	ctx, cancel := context.WithTimeout(context.Background(), s.n.cfg.LeaseTTL)
	defer cancel()
	if err := t.resign(ctx); err != nil {
		s.n.log.Warn("error resigning a shard; it goes with the session", "shard", s.k, "err", err)
	}
}
