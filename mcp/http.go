package mcp

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/client"
)

// DefaultSessionTimeout ends an HTTP session that sent no request for this
// long, and with it the renewal of its leases: an agent that vanished
// without ending its session holds its nodes no longer than this plus a TTL.
const DefaultSessionTimeout = 30 * time.Minute

// HTTPOptions configure Handler.
type HTTPOptions struct {
	Options
	// Identity names the authenticated caller of a request (tenant and
	// subject), set by the authentication in front of the handler; "" when
	// there is none (api.Identity when nil). A session is bound to the
	// identity that opened it: another caller's request for it is refused.
	Identity func(*http.Request) string
	// SessionTimeout is DefaultSessionTimeout when zero.
	SessionTimeout time.Duration
}

// Handler serves MCP's streamable HTTP transport (mounted at /mcp behind
// the API's authentication). Its tools call the API's own handler in
// process, as the caller, with the caller's bearer token.
type Handler struct {
	stream http.Handler

	mu       sync.Mutex
	sessions map[*session]*sdk.ServerSession
	closed   bool
}

// NewHandler returns the /mcp handler (server.Config.MCP); apiHandler is
// the Tether API's handler, which the tools call in process.
func NewHandler(apiHandler http.Handler, opts HTTPOptions) *Handler {
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	h := &Handler{sessions: map[*session]*sdk.ServerSession{}}
	stream := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		return h.newSession(apiHandler, r, opts.Options)
	}, &sdk.StreamableHTTPOptions{Logger: opts.Logger, SessionTimeout: opts.SessionTimeout})
	// The SDK binds a session to the TokenInfo's UserID of the request that
	// opened it and refuses any other user's request for it.
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		var id string
		if opts.Identity != nil {
			id = opts.Identity(r)
		} else {
			id = api.Identity(r.Context())
		}
		if id == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id}, nil
	}
	h.stream = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(stream)
	return h
}

// ServeHTTP serves one request of the streamable HTTP transport.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.stream.ServeHTTP(w, r) }

// newSession is the MCP server of a new HTTP session (nil once closed: the
// SDK then answers 400).
func (h *Handler) newSession(apiHandler http.Handler, r *http.Request, opts Options) *sdk.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	sess := newSession(opts)
	sess.setAuth(r.Header.Get("Authorization"))
	c, err := client.NewClientWithResponses("http://tether.in-process",
		client.WithHTTPClient(&http.Client{Transport: inProcess{apiHandler}}),
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
			// From its first request the session is Close's to end; it
			// ends itself when the client hangs up or it times out.
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok {
				once.Do(func() { h.watch(sess, ss) })
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

// watch tracks a session until it ends, then stops its keepers.
func (h *Handler) watch(s *session, ss *sdk.ServerSession) {
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.sessions[s] = ss
	}
	h.mu.Unlock()
	if closed {
		s.close()
		_ = ss.Close()
		return
	}
	go func() {
		_ = ss.Wait()
		s.close()
		h.untrack(s)
	}()
}

func (h *Handler) untrack(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.sessions, s)
}

// Close ends every session (their streams end, their leases are no longer
// renewed) and refuses new ones. Call it before the server shuts down, so
// that no open stream holds the shutdown and no renewal reaches a closed
// store.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	sessions := h.sessions
	h.sessions = map[*session]*sdk.ServerSession{}
	h.mu.Unlock()
	for s, ss := range sessions {
		s.close()
		_ = ss.Close()
	}
}
