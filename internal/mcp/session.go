package mcp

import (
	"context"
	"sync"

	"github.com/tether-run/tether/client"
)

// session is the state of one MCP session: the client its tools call, and
// the leases it keeps alive. It lives until close: the end of the stdio
// stream, or of the HTTP session.
type session struct {
	api     *client.ClientWithResponses
	keep    []client.KeepOption
	onRenew func(string, client.RenewResponse)

	ctx    context.Context // ends at close; every keeper runs under it
	cancel context.CancelFunc

	mu   sync.Mutex
	held map[string]*kept // by node id
	auth string           // the Authorization of the latest HTTP request (HTTP sessions)
}

// kept is a lease the session renews: the latest lease the server returned
// for it and the keeper's stop.
type kept struct {
	lease client.Lease
	stop  func() error
}

func newSession(opts Options) *session {
	ctx, cancel := context.WithCancel(context.Background())
	return &session{keep: opts.Keep, onRenew: opts.OnRenew, ctx: ctx, cancel: cancel, held: map[string]*kept{}}
}

// hold starts keeping lease on nodeID, replacing (and stopping) any keeper
// the session had on that node.
func (s *session) hold(nodeID string, lease client.Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return // closed: keep nothing more
	}
	if old := s.held[nodeID]; old != nil {
		go func() { _ = old.stop() }() // stop waits for a renewal in flight; not under mu
	}
	k := &kept{lease: lease}
	onRenew := client.KeepOnRenew(func(r client.RenewResponse) {
		s.mu.Lock()
		k.lease = r.Lease
		s.mu.Unlock()
		if s.onRenew != nil {
			s.onRenew(nodeID, r)
		}
	})
	kctx, stop := client.Keep(s.ctx, s.api, nodeID, lease, append(append([]client.KeepOption{}, s.keep...), onRenew)...)
	k.stop = stop
	s.held[nodeID] = k
	// A lease the keeper loses (it lapsed, was taken or ended elsewhere) is
	// forgotten, so the next call on the node carries no stale fence.
	context.AfterFunc(kctx, func() {
		s.mu.Lock()
		if s.held[nodeID] == k {
			delete(s.held, nodeID)
		}
		s.mu.Unlock()
	})
}

// unhold stops keeping nodeID's lease and returns it (ok false when the
// session kept none). Called before a call that ends the lease, so that no
// renewal races it; rehold starts keeping it again when that call left the
// lease live.
func (s *session) unhold(nodeID string) (client.Lease, bool) {
	s.mu.Lock()
	k := s.held[nodeID]
	delete(s.held, nodeID)
	s.mu.Unlock()
	if k == nil {
		return client.Lease{}, false
	}
	_ = k.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	return k.lease, true
}

// lease is the lease the session keeps on nodeID.
func (s *session) lease(nodeID string) (client.Lease, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.held[nodeID]
	if k == nil {
		return client.Lease{}, false
	}
	return k.lease, true
}

// close stops every keeper. The leases are not released: each lapses at its
// expiry, and the reaper requeues the node (a session that ended by accident
// costs one attempt, as a crashed runner does). close may be called again.
func (s *session) close() {
	s.mu.Lock()
	s.cancel()
	held := s.held
	s.held = map[string]*kept{}
	s.mu.Unlock()
	for _, k := range held {
		_ = k.stop()
	}
}

// setAuth remembers the Authorization header of an HTTP session's latest
// request, which the session's calls (and its keepers' renewals) carry.
func (s *session) setAuth(h string) {
	if h == "" {
		return
	}
	s.mu.Lock()
	s.auth = h
	s.mu.Unlock()
}

func (s *session) authorization() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth
}
