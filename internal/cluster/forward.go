package cluster

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

// A request for a shard owned elsewhere is passed to the owner in this
// server's view. While the shard moves that view may be behind: the owner
// it names may have handed the shard over, stopped listening, or not yet
// see itself elected. Such an owner serves nothing; it answers misdirected
// (421) without reading the body, or cannot be dialled, so nothing was done
// and the front sends the kept body again to whichever server its view
// names next. A server never passes on a request that was passed to it, so
// a request is forwarded once per attempt and never loops.

// errMisdirected is a forwarded request's answer from a server that does
// not serve its shard.
var errMisdirected = errors.New("the server does not serve the request's shard")

// attempt is one passing of a request to an owner.
type attempt struct {
	replay bool       // the body is kept: the request may go elsewhere if not served
	result passResult // passed unless the request may go elsewhere
}

// passResult is what became of a request passed on.
type passResult int

const (
	passed          passResult = iota // answered, by the owner or with its error
	passMisdirected                   // the server does not serve the shard; nothing done
	passUnreachable                   // the server could not be dialled; nothing sent
)

type attemptKey struct{}

func attemptOf(r *http.Request) *attempt {
	a, _ := r.Context().Value(attemptKey{}).(*attempt)
	return a
}

// replayable is a request's body as the front keeps it to pass it on.
type replayable struct {
	data []byte
	ok   bool          // data is the whole body: it can be sent again
	rest io.ReadCloser // !ok: the body to send once
}

// readReplayable reads r's body to send it again if need be, unless it is
// a blob's (streamed once, up to gigabytes) or larger than the API takes
// (which the owner refuses anyway).
func (n *Node) readReplayable(r *http.Request) *replayable {
	if strings.HasPrefix(r.URL.Path, "/v1/blobs") {
		return &replayable{rest: r.Body}
	}
	limit := n.cfg.Server.MaxBodyBytes
	if limit <= 0 {
		limit = 1 << 20 // the API's default
	}
	var buf bytes.Buffer
	_, err := io.Copy(&buf, io.LimitReader(r.Body, limit+1))
	if err != nil || int64(buf.Len()) > limit {
		return &replayable{rest: readCloser{io.MultiReader(&buf, r.Body), r.Body}}
	}
	return &replayable{data: buf.Bytes(), ok: true}
}

// again is the kept body, to read from the start (only when ok).
func (b *replayable) again() io.ReadCloser { return io.NopCloser(bytes.NewReader(b.data)) }

type readCloser struct {
	io.Reader
	io.Closer
}

// pass passes r on to the server at base. It answers nothing when r may go
// elsewhere: its body is kept, and the server could not be dialled or
// answered misdirected.
func (n *Node) pass(w http.ResponseWriter, r *http.Request, base string, body *replayable) passResult {
	a := &attempt{replay: body.ok}
	out := r.WithContext(context.WithValue(r.Context(), attemptKey{}, a))
	if body.ok {
		out.Body = body.again()
		out.GetBody = func() (io.ReadCloser, error) { return body.again(), nil }
		out.ContentLength, out.TransferEncoding = int64(len(body.data)), nil
	} else {
		out.Body = body.rest
	}
	n.metrics.forwarded.Inc()
	n.proxy(base).ServeHTTP(w, out)
	return a.result
}

// blobTransferTimeout is the API's deadline of a blob transfer.
const blobTransferTimeout = 30 * time.Minute

// proxyDeadlines gives a request passed on the deadlines the API gives it
// when it serves it itself (on this same connection): a blob transfer has
// 30 minutes, an event stream no write deadline.
func proxyDeadlines(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/blobs"):
		_ = rc.SetReadDeadline(time.Now().Add(blobTransferTimeout))
		_ = rc.SetWriteDeadline(time.Now().Add(blobTransferTimeout))
	case r.URL.Path == "/v1/events" && strings.Contains(r.Header.Get("Accept"), "text/event-stream"):
		_ = rc.SetWriteDeadline(time.Time{})
	}
}

// proxy is the reverse proxy to the server at base.
func (n *Node) proxy(base string) http.Handler {
	if p, ok := n.proxies.Load(base); ok {
		return p.(http.Handler)
	}
	target, err := url.Parse(base)
	if err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			unavailable(w, r, "the server that owns this tenant's shard has a bad address; retry")
		})
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Set(HeaderForwarded, n.ID())
			if a := attemptOf(pr.In); a != nil && a.replay {
				pr.Out.Header.Set(headerReroutes, "1")
			} else {
				pr.Out.Header.Del(headerReroutes)
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusMisdirectedRequest && resp.Header.Get(headerMisdirected) != "" {
				return errMisdirected
			}
			return nil
		},
		// Flush at once: long polls and event streams pass through.
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var op *net.OpError
			dial := errors.As(err, &op) && op.Op == "dial"
			if a := attemptOf(r); a != nil && a.replay {
				// Nothing was done: the front routes it again.
				switch {
				case errors.Is(err, errMisdirected):
					a.result = passMisdirected
					return
				case dial:
					a.result = passUnreachable
					return
				}
			}
			if errors.Is(err, errMisdirected) {
				unavailable(w, r, "this server does not serve this tenant right now; retry")
				return
			}
			if r.Context().Err() == nil {
				n.log.Warn("error passing a request to its shard's owner", "owner", base, "err", err)
			}
			if dial {
				// Nothing was sent: the request surely had no effect.
				unavailable(w, r, "the server that owns this tenant's shard could not be reached; the request was not passed on; retry")
				return
			}
			unavailable(w, r, "the server that owns this tenant's shard did not answer; retry")
		},
	}
	actual, _ := n.proxies.LoadOrStore(base, p)
	return actual.(http.Handler)
}
