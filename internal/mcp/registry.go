package mcp

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of the caps on live HTTP sessions.
const (
	DefaultMaxSessions            = 1024 // TETHER_MCP_MAX_SESSIONS
	DefaultMaxSessionsPerIdentity = 32   // TETHER_MCP_MAX_SESSIONS_PER_IDENTITY
)

// registry is the live HTTP sessions, bounded: at most maxTotal at once,
// and maxPerIdentity of one identity. Each also holds one of its identity's
// waits (hold) for as long as it lives. Invariants:
//
//   - a session's place is reserved before the SDK makes the session (the
//     request that opens it), so that no number of concurrent requests
//     passes a cap;
//   - a place is given back exactly once: when the session ends, or when
//     the request that reserved it made no session;
//   - byID holds exactly the sessions that are bound and not ended; a
//     request naming any other id, or naming a session of another identity,
//     gets the same answer.
type registry struct {
	maxTotal, maxPerIdentity int
	hold                     func(*http.Request) (release func(), err error)

	mu          sync.Mutex
	closed      bool
	total       int
	perIdentity map[string]int
	byID        map[string]*slot
}

// slot is one session's place.
type slot struct {
	identity string
	release  func() // gives back the session's wait

	// Under registry.mu:
	bound, ended bool
	id           string
	sess         *session
	ss           *sdk.ServerSession
}

// errSessionsClosed refuses a session once the handler is closed.
var errSessionsClosed = errors.New("the server is shutting down")

func newRegistry(maxTotal, maxPerIdentity int, hold func(*http.Request) (func(), error)) *registry {
	return &registry{maxTotal: maxTotal, maxPerIdentity: maxPerIdentity, hold: hold,
		perIdentity: map[string]int{}, byID: map[string]*slot{}}
}

// reserve takes a place for a session identity opens with r, or says which
// cap refuses it (a refusal of hold's, or one of the registry's).
func (g *registry) reserve(r *http.Request, identity string) (*slot, error) {
	g.mu.Lock()
	switch {
	case g.closed:
		g.mu.Unlock()
		return nil, errSessionsClosed
	case g.maxPerIdentity > 0 && g.perIdentity[identity] >= g.maxPerIdentity:
		g.mu.Unlock()
		return nil, fmt.Errorf("this identity has %d MCP sessions open, the most one identity may (TETHER_MCP_MAX_SESSIONS_PER_IDENTITY): end one (DELETE /mcp) or let it expire", g.maxPerIdentity)
	case g.maxTotal > 0 && g.total >= g.maxTotal:
		g.mu.Unlock()
		return nil, fmt.Errorf("the server has %d MCP sessions open, the most it keeps (TETHER_MCP_MAX_SESSIONS)", g.maxTotal)
	}
	g.total++
	g.perIdentity[identity]++
	g.mu.Unlock()
	release, err := g.hold(r)
	if err != nil {
		g.mu.Lock()
		g.giveBack(identity)
		g.mu.Unlock()
		return nil, err
	}
	return &slot{identity: identity, release: release}, nil
}

// bind gives sl to the session the SDK made; false when sl was given back
// meanwhile (or the registry closed), and the session must end.
func (g *registry) bind(sl *slot, sess *session, ss *sdk.ServerSession) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if sl.ended || g.closed {
		return false
	}
	sl.bound, sl.id, sl.sess, sl.ss = true, ss.ID(), sess, ss
	g.byID[sl.id] = sl
	return true
}

// owns reports whether id is a live session of identity.
func (g *registry) owns(id, identity string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	sl := g.byID[id]
	return sl != nil && sl.identity == identity
}

// end gives sl back and stops its session's keepers; it may be called
// again.
func (g *registry) end(sl *slot) {
	g.mu.Lock()
	if sl.ended {
		g.mu.Unlock()
		return
	}
	sl.ended = true
	if sl.bound {
		delete(g.byID, sl.id)
	}
	g.giveBack(sl.identity)
	sess := sl.sess
	g.mu.Unlock()
	sl.release()
	if sess != nil {
		sess.close()
	}
}

// endUnbound gives sl back unless a session took it: the request that
// reserved it made none.
func (g *registry) endUnbound(sl *slot) {
	g.mu.Lock()
	bound := sl.bound
	g.mu.Unlock()
	if !bound {
		g.end(sl)
	}
}

// endID ends the session id, if it is live.
func (g *registry) endID(id string) {
	g.mu.Lock()
	sl := g.byID[id]
	g.mu.Unlock()
	if sl != nil {
		g.end(sl)
	}
}

// close ends every session and refuses new ones.
func (g *registry) close() {
	g.mu.Lock()
	g.closed = true
	live := make([]*slot, 0, len(g.byID))
	for _, sl := range g.byID {
		live = append(live, sl)
	}
	g.mu.Unlock()
	for _, sl := range live {
		g.end(sl)
		_ = sl.ss.Close()
	}
}

func (g *registry) giveBack(identity string) {
	g.total--
	if g.perIdentity[identity]--; g.perIdentity[identity] <= 0 {
		delete(g.perIdentity, identity)
	}
}
