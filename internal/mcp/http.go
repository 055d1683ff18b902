package mcp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/client"
)

// DefaultSessionTimeout ends an HTTP session that sent no request for this
// long (TETHER_MCP_SESSION_IDLE_MS), and with it the renewal of its leases:
// an agent that vanished without ending its session holds its nodes no
// longer than this plus a TTL.
const DefaultSessionTimeout = 30 * time.Minute

// HTTPOptions configure Handler.
type HTTPOptions struct {
	Options
	// Identity names the authenticated caller of a request (tenant and
	// subject), set by the authentication in front of the handler; "" when
	// there is none (api.Identity when nil). A session is bound to the
	// identity that opened it: another caller's request for it is answered
	// as one for a session that does not exist.
	Identity func(*http.Request) string
	// SessionTimeout is DefaultSessionTimeout when zero.
	SessionTimeout time.Duration
	// AllowedOrigins are the browser origins (scheme://host[:port]) that may
	// use /mcp besides the server's own (TETHER_MCP_ALLOWED_ORIGINS); see
	// ParseAllowedOrigins. A request without an Origin always may.
	AllowedOrigins []string
	// MaxSessions caps the live sessions, MaxSessionsPerIdentity those of
	// one identity (DefaultMaxSessions, DefaultMaxSessionsPerIdentity when
	// zero; negative: no cap).
	MaxSessions, MaxSessionsPerIdentity int
	// Hold counts a session, or a session's standalone stream, against the
	// caller's caps on long-lived requests until release, or refuses it
	// (api.HoldWait when nil: TETHER_MAX_WAITS_PER_IDENTITY and _TENANT).
	Hold func(*http.Request) (release func(), err error)
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerIdentity == 0 {
		o.MaxSessionsPerIdentity = DefaultMaxSessionsPerIdentity
	}
	if o.Identity == nil {
		o.Identity = func(r *http.Request) string { return api.Identity(r.Context()) }
	}
	if o.Hold == nil {
		o.Hold = func(r *http.Request) (func(), error) { return api.HoldWait(r.Context()) }
	}
	return o
}

// Handler serves MCP's streamable HTTP transport (mounted at /mcp behind
// the API's authentication). Its tools call the API's own handler in
// process, as the caller, with the caller's bearer token.
//
// Before the SDK sees a request, Handler checks its Origin, answers a
// request for a session the caller does not own as one for an unknown
// session, and counts what lives long: a new session (against the
// session caps and the caller's waits) and a session's standalone stream
// (against the caller's waits). Its refusals, like the SDK's, are plain
// text with a status, which the API turns into problem documents.
type Handler struct {
	stream   http.Handler
	origins  origins
	identity func(*http.Request) string
	hold     func(*http.Request) (func(), error)
	sessions *registry
	// probe answers the SDK's question of the protocol versions for every
	// request that opens no session; it is never connected.
	probe *sdk.Server
}

// slotKey carries the place reserved for the session a request opens.
type slotKey struct{}

// NewHandler returns the /mcp handler (server.Config.MCP); apiHandler is
// the Tether API's handler, which the tools call in process. It panics on
// an AllowedOrigins that ParseAllowedOrigins refuses.
func NewHandler(apiHandler http.Handler, opts HTTPOptions) *Handler {
	opts = opts.withDefaults()
	allowed, err := newOrigins(opts.AllowedOrigins)
	if err != nil {
		panic("mcp: AllowedOrigins: " + err.Error())
	}
	h := &Handler{
		origins: allowed, identity: opts.Identity, hold: opts.Hold,
		sessions: newRegistry(opts.MaxSessions, opts.MaxSessionsPerIdentity, opts.Hold),
		probe:    sdk.NewServer(&sdk.Implementation{Name: "tether"}, nil),
	}
	stream := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		sl, _ := r.Context().Value(slotKey{}).(*slot)
		if sl == nil {
			return h.probe
		}
		return h.newSession(apiHandler, r, sl, opts.Options)
	}, &sdk.StreamableHTTPOptions{Logger: opts.Logger, SessionTimeout: opts.SessionTimeout})
	// The SDK binds a session to the TokenInfo's UserID of the request that
	// opened it and refuses any other user's request for it (a second line
	// behind ServeHTTP's check).
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id := h.identity(r)
		if id == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id}, nil
	}
	h.stream = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(stream)
	return h
}

// ServeHTTP serves one request of the streamable HTTP transport.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if why := h.origins.refusal(r); why != "" {
		http.Error(w, why, http.StatusForbidden)
		return
	}
	identity := h.identity(r)
	if identity == "" {
		h.stream.ServeHTTP(w, r) // refused: no caller
		return
	}
	id := r.Header.Get("Mcp-Session-Id")
	switch {
	case id != "":
		if !h.sessions.owns(id, identity) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if r.Method == http.MethodGet { // the standalone stream, open until the client leaves
			release, err := h.hold(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusTooManyRequests)
				return
			}
			defer release()
		}
		if r.Method == http.MethodDelete {
			// Ended here first: the SDK's close waits for the session's
			// calls in flight, and ending ours ends a wait_for (or a long
			// poll) among them, so the DELETE does not wait for it. Its
			// place is free when the answer leaves.
			h.sessions.endID(id)
		}
		h.stream.ServeHTTP(w, r)
	case r.Method == http.MethodPost: // opens a session
		sl, err := h.sessions.reserve(r, identity)
		switch {
		case errors.Is(err, errSessionsClosed):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusTooManyRequests)
			return
		}
		defer h.sessions.endUnbound(sl)
		h.stream.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), slotKey{}, sl)))
	default:
		h.stream.ServeHTTP(w, r) // refused: GET and DELETE name a session
	}
}

// newSession is the MCP server of a new HTTP session, which takes sl.
func (h *Handler) newSession(apiHandler http.Handler, r *http.Request, sl *slot, opts Options) *sdk.Server {
	sess := newSession(opts)
	sess.setAuth(r.Header.Get("Authorization"))
	c, err := client.NewClientWithResponses("http://tether.in-process",
		client.WithHTTPClient(&http.Client{Transport: inProcess{apiHandler}}),
		// In process there is no connection to lose; the MCP caller decides
		// whether to call a tool again.
		client.WithoutRetries(),
		client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", sess.authorization())
			return nil
		}))
	if err != nil {
		return nil // the URL above parses
	}
	sess.api = c
	srv := newServer(sess, opts)
	var once sync.Once
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			// From its first request the session holds its place; it ends
			// when deleted, when it times out, or at Close.
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok {
				once.Do(func() { h.watch(sl, sess, ss) })
			}
			// Every request carries the caller's current token (a JWT may
			// be refreshed while the session lives): the session's calls
			// and renewals use the latest.
			if e := req.GetExtra(); e != nil && e.Header != nil {
				sess.setAuth(e.Header.Get("Authorization"))
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

// watch binds sl to a new session until it ends, then gives the place
// back and stops the session's keepers.
func (h *Handler) watch(sl *slot, s *session, ss *sdk.ServerSession) {
	if !h.sessions.bind(sl, s, ss) {
		s.close()
		_ = ss.Close()
		return
	}
	go func() {
		_ = ss.Wait()
		h.sessions.end(sl)
	}()
}

// Close ends every session (their streams end, their leases are no longer
// renewed) and refuses new ones. Call it before the server shuts down, so
// that no open stream holds the shutdown and no renewal reaches a closed
// store.
func (h *Handler) Close() { h.sessions.close() }
