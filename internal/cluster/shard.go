package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

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
func (s *shard) run(ctx context.Context, sess *concurrency.Session) {
	id := leaseID(sess)
	el := concurrency.NewElection(sess, s.n.cfg.Prefix+"shards/"+shardName(s.k)+"/owner")
	for ctx.Err() == nil {
		if !s.n.waitFor(ctx, func(v *view) (bool, time.Time) { return s.wanted(v, id) }) {
			return
		}
		if s.campaign(ctx, el, id) {
			s.own(ctx, el, id)
		}
	}
}

func leaseID(sess *concurrency.Session) string {
	return fmt.Sprintf("%x", int64(sess.Lease()))
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

// campaign waits to be elected; it gives up (false) when the shard is no
// longer wanted here.
func (s *shard) campaign(ctx context.Context, el *concurrency.Election, id string) bool {
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
	// Canceled, Campaign deletes its key again.
	if err := el.Campaign(cctx, s.n.cfg.Advertise); err != nil {
		if cctx.Err() == nil {
			s.n.log.Warn("error campaigning for a shard; retrying", "shard", s.k, "err", err)
			sleep(ctx, 500*time.Millisecond)
		}
		return false
	}
	return true
}

// own serves the shard this server was just elected for until it must stop,
// then closes it, and resigns when handing it over.
func (s *shard) own(ctx context.Context, el *concurrency.Election, id string) {
	key, rev := el.Key(), el.Rev()
	s.n.log.Info("elected owner of a shard", "shard", s.k, "id", id, "rev", rev)
	s.n.metrics.elected.Inc()
	for {
		inst, err := s.open(ctx, key, rev)
		if err != nil {
			// The session ended or the election is lost: resigning is
			// harmless either way.
			s.resign(el)
			return
		}
		reason := s.serve(ctx, inst, id)
		s.close(inst)
		switch reason {
		case stopSession:
			return // the session's end (or revocation) deletes the key
		case stopHandoff:
			s.n.log.Info("handing a shard over to its desired owner", "shard", s.k)
			s.resign(el)
			// Wait until the view no longer names this server, so that run
			// does not take the shard straight back.
			s.n.waitFor(ctx, func(v *view) (bool, time.Time) { return v.owners[s.k].id != id, time.Time{} })
			return
		case stopBroken:
			if s.leader(ctx, key, rev) {
				s.n.log.Warn("a shard's store broke; opening it again", "shard", s.k)
				continue
			}
			s.n.log.Warn("a shard's store broke and this server is no longer its owner", "shard", s.k)
			s.resign(el)
			return
		}
	}
}

// open opens the shard's store and server, retrying while this server is
// still the owner.
func (s *shard) open(ctx context.Context, key string, rev int64) (*instance, error) {
	guard := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", rev)}
	wait := 100 * time.Millisecond
	for {
		inst, err := s.openOnce(ctx, guard)
		if err == nil {
			return inst, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.n.log.Warn("error opening a shard; retrying", "shard", s.k, "err", err)
		sleep(ctx, wait)
		wait = min(2*wait, 2*time.Second)
		if !s.leader(ctx, key, rev) {
			return nil, errors.New("no longer the owner")
		}
	}
}

func (s *shard) openOnce(ctx context.Context, guard []clientv3.Cmp) (*instance, error) {
	deposed := make(chan struct{})
	var once sync.Once
	store, err := openShardStore(s.n, s.k, guard, func() { once.Do(func() { close(deposed) }) })
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

// leader says whether the election key is still this server's (false when
// etcd cannot tell).
func (s *shard) leader(ctx context.Context, key string, rev int64) bool {
	ctx, cancel := context.WithTimeout(ctx, s.n.cfg.LeaseTTL)
	defer cancel()
	resp, err := s.n.cfg.Client.Get(ctx, key)
	return err == nil && len(resp.Kvs) == 1 && resp.Kvs[0].CreateRevision == rev
}

// resign gives the election up.
func (s *shard) resign(el *concurrency.Election) {
	ctx, cancel := context.WithTimeout(context.Background(), s.n.cfg.LeaseTTL)
	defer cancel()
	if err := el.Resign(ctx); err != nil {
		s.n.log.Warn("error resigning a shard; its key goes with the session", "shard", s.k, "err", err)
	}
}
