package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/ui"
	"github.com/tether-run/tether/internal/version"
)

// Headers the front reads and writes.
const (
	// HeaderForwarded marks a request one server passed to another (the
	// value is the sender's id); it is never passed on again.
	HeaderForwarded = "X-Tether-Forwarded"
	// HeaderServedBy names the server (its id) that served a request: the
	// owner of the tenant's shard, behind any forwarding; on /health, the
	// server that answered. For operators and tests; clients need not care.
	HeaderServedBy  = "Tether-Served-By"
	headerRequestID = "X-Request-Id"
	// headerReroutes, on a forwarded request, says the sender can send it
	// again elsewhere: a server that does not serve the shard answers it
	// misdirected (421, headerMisdirected) instead of 503, and the sender
	// routes it again by its own view.
	headerReroutes    = "X-Tether-Reroutes"
	headerMisdirected = "X-Tether-Misdirected"
)

// handler builds the front.
func (n *Node) handler() http.Handler {
	skill := api.SkillMD()
	if p := n.cfg.Server.SkillMDPath; p != "" {
		if b, err := os.ReadFile(p); err == nil {
			skill = b
		}
	}
	var operators [][sha256.Size]byte
	for _, t := range n.cfg.Server.OperatorTokens {
		if t != "" {
			operators = append(operators, sha256.Sum256([]byte(t)))
		}
	}
	scrapers := api.NewScrapers(n.cfg.Server.OperatorTokens, n.cfg.Server.MetricsTokens)
	files := ui.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := requestID(r.Header.Get(headerRequestID))
		r.Header.Set(headerRequestID, id)
		w.Header().Set(headerRequestID, id)
		path := r.URL.Path
		switch {
		case path == "/v1" || strings.HasPrefix(path, "/v1/") || path == "/mcp" || strings.HasPrefix(path, "/mcp/"):
			n.route(w, r)
		case path == "/health":
			if public(w, r, http.MethodGet, http.MethodHead) {
				w.Header().Set(HeaderServedBy, n.ID())
				b := version.Get()
				writeJSON(w, r, http.StatusOK, struct {
					Status   string `json:"status"`
					Version  string `json:"version"`
					Commit   string `json:"commit,omitempty"`
					Modified bool   `json:"modified,omitempty"`
				}{"ok", b.Version, b.Commit, b.Modified})
			}
		case path == "/ready":
			if public(w, r, http.MethodGet, http.MethodHead) {
				n.ready(w, r)
			}
		case path == "/metrics":
			if public(w, r, http.MethodGet) {
				n.scrape(w, r, scrapers)
			}
		case path == "/openapi.yaml":
			if public(w, r, http.MethodGet) {
				w.Header().Set("Content-Type", "application/yaml")
				_, _ = w.Write(api.OpenAPI())
			}
		case path == "/skill.md":
			if public(w, r, http.MethodGet) {
				w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
				_, _ = w.Write(skill)
			}
		case path == ui.Page:
			if public(w, r, http.MethodGet) {
				files.ServeHTTP(w, r)
			}
		case path == ui.Prefix:
			if public(w, r, http.MethodGet) {
				http.Redirect(w, r, ui.Page, http.StatusMovedPermanently)
			}
		case strings.HasPrefix(path, ui.Prefix):
			if !public(w, r, http.MethodGet) {
				return
			}
			if !ui.Has(strings.TrimPrefix(path, ui.Prefix)) {
				writeProblem(w, r, http.StatusNotFound, "not_found", "no such endpoint", 0)
				return
			}
			files.ServeHTTP(w, r)
		case path == "/admin/backup":
			if allow(w, r, http.MethodGet) {
				n.backup(w, r, operators)
			}
		default:
			writeProblem(w, r, http.StatusNotFound, "not_found", "no such endpoint", 0)
		}
	})
}

// allow answers 405 unless r's method is one of methods.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeProblem(w, r, http.StatusMethodNotAllowed, "bad_request", "method not allowed on this endpoint", 0)
	return false
}

// public is allow for the public endpoints, which also refuse a request
// body, as the API's own routes do (api.HasBody).
func public(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	if !allow(w, r, methods...) {
		return false
	}
	if api.HasBody(r) {
		writeProblem(w, r, http.StatusBadRequest, "bad_request", api.ErrBodyRefused.Error(), 0)
		return false
	}
	return true
}

// route serves an authenticated request: here when this server serves the
// tenant's shard, else at the shard's owner. While the shard moves (it has
// no owner yet, its owner here is opening or closing it, or the owner it
// was passed to no longer serves it) the request waits, handoverWait at
// most, and goes where the shard is served once it is.
func (n *Node) route(w http.ResponseWriter, r *http.Request) {
	n.lastRequest.Store(time.Now().UnixNano())
	t, err := n.resolver.Tenant(r.Header.Get("Authorization"))
	if err != nil {
		var u *fault.Unauthorized
		if !errors.As(err, &u) {
			n.log.Error("error reading a request's tenant", "err", err)
		}
		writeProblem(w, r, http.StatusUnauthorized, "unauthorized", err.Error(), 0)
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/v1/blobs" && n.cfg.Server.BlobDir == "" {
		unavailable(w, r, "blob uploads need TETHER_BLOB_DIR, a directory every server shares (NFS, say), when the servers form a cluster (TETHER_STORE=etcd or postgres)")
		return
	}
	s := n.shards[n.ShardOf(t)]
	forwarded := r.Header.Get(HeaderForwarded) != ""
	var body *replayable // read once the request is first passed on
	// waiting is when the request first had to wait; orphaned, since when
	// its shard has had no owner that could be reached (zero while it has).
	var waiting, orphaned time.Time
	for {
		if inst := s.inst.Load(); inst != nil && n.leaseFresh() && inst.acquire() {
			defer inst.release()
			if body != nil {
				r.Body = body.again() // read when the request was passed on
			}
			w.Header().Set(HeaderServedBy, n.ID())
			inst.srv.API.Handler().ServeHTTP(&freshWriter{ResponseWriter: w, r: r, fresh: n.awaitFresh}, r)
			return
		}
		v := n.view()
		o := v.owners[s.k]
		if _, live := v.members[o.id]; !live {
			o = owner{} // a session that ended: its key goes when its lease does
		}
		look := 50 * time.Millisecond
		unreachable := false
		switch {
		case o.id != "" && o.id != n.ID() && forwarded:
			// Sent here by a server whose view is behind (or this
			// server's is): never on again, but back to the sender, who
			// routes it again, when it can.
			if r.Header.Get(headerReroutes) != "" {
				misdirected(w, r)
				return
			}
			unavailable(w, r, "this server does not serve this tenant right now; retry")
			return
		case o.id != "" && o.id != n.ID():
			if body == nil {
				proxyDeadlines(w, r)
				body = n.readReplayable(r)
			}
			switch n.pass(w, r, o.url, body) {
			case passed:
				return
			case passUnreachable:
				unreachable = true
			}
			// Nothing was done and nothing answered: look again soon,
			// once the views have caught up.
			look = 25 * time.Millisecond
		}
		// No owner yet, this server is the owner and opening or closing the
		// shard, or the owner the request was passed to did not serve it.
		now := time.Now()
		if waiting.IsZero() {
			waiting = now
		}
		// A planned move has an owner that can serve soon. An owner that
		// cannot be reached, or this server as the owner while its lease is
		// not known fresh (etcd does not answer its keepalives: the quorum
		// may be lost), is not one: the request waits orphanWait only.
		switch {
		case o.id != "" && !unreachable && (o.id != n.ID() || n.leaseFresh()):
			orphaned = time.Time{}
		case orphaned.IsZero():
			orphaned = now
		}
		switch {
		case !orphaned.IsZero() && now.Sub(orphaned) >= orphanWait && unreachable:
			unavailable(w, r, "the server that owns this tenant's shard could not be reached; the request was not passed on; retry")
			return
		case !orphaned.IsZero() && now.Sub(orphaned) >= orphanWait, now.Sub(waiting) >= handoverWait:
			unavailable(w, r, "this tenant's shard has no server right now (an election is in progress); retry")
			return
		}
		select {
		case <-v.changed:
		case <-time.After(look):
			// The owner here, with a lease not known fresh (lease.go), or an
			// owner elsewhere that did not serve the request: look again
			// once a keepalive, or the other server's view, may have caught
			// up.
		case <-r.Context().Done():
			unavailable(w, r, "the request was cancelled")
			return
		}
	}
}

// misdirected answers a forwarded request for a shard this server does not
// serve: 421, marked as the cluster's own so that the sender routes the
// request again instead of passing the answer on.
func misdirected(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(headerMisdirected, "1")
	writeProblem(w, r, http.StatusMisdirectedRequest, "unavailable", "this server does not serve this tenant right now; route the request again", 1)
}

// ready answers /ready: 503 when the store does not answer (or, etcd, has
// an alarm raised: NOSPACE, CORRUPT), or this server is stopping or not
// (yet, or again) a member of the cluster.
func (n *Node) ready(w http.ResponseWriter, r *http.Request) {
	if n.ctx.Err() != nil || n.leaving.Load() {
		unavailable(w, r, "this server is stopping")
		return
	}
	if _, member := n.view().members[n.ID()]; !member {
		unavailable(w, r, "this server is joining the cluster")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := n.coord.ready(ctx); err != nil {
		unavailable(w, r, err.Error())
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"status": "ready", "id": n.ID(), "shards_owned": n.Owned()})
}

// scrape answers GET /metrics: the process-wide series, or every series
// for a scrape token (api.Scrapers).
func (n *Node) scrape(w http.ResponseWriter, r *http.Request, scrapers api.Scrapers) {
	full, err := scrapers.Full(r)
	switch {
	case err != nil:
		writeProblem(w, r, http.StatusUnauthorized, "unauthorized", err.Error(), 0)
	case full:
		n.metrics.full.ServeHTTP(w, r)
	default:
		n.metrics.public.ServeHTTP(w, r)
	}
}

// backup answers /admin/backup: the records are the store's to back up.
func (n *Node) backup(w http.ResponseWriter, r *http.Request, operators [][sha256.Size]byte) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	sum := sha256.Sum256([]byte(tok))
	found := false
	for _, want := range operators {
		if subtle.ConstantTimeCompare(sum[:], want[:]) == 1 {
			found = true
		}
	}
	if !ok || tok == "" || !found {
		writeProblem(w, r, http.StatusUnauthorized, "unauthorized", "an operator token is required (Authorization: Bearer <TETHER_OPERATOR_TOKENS entry>)", 0)
		return
	}
	writeProblem(w, r, http.StatusNotImplemented, "unavailable", n.coord.backupAdvice(), 0)
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// requestID is the caller's X-Request-Id when it is sane, or a new one (as
// the API's own).
func requestID(id string) string {
	if id != "" && len(id) <= 128 && !strings.ContainsAny(id, "\r\n") {
		return id
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
