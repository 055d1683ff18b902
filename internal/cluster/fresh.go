package cluster

import (
	"context"
	"net/http"
)

// freshWriter is the response of a request this server serves as a shard's
// owner. Its status line goes out only if the server's session lease (on
// etcd, or its member row on PostgreSQL) is still surely alive at that
// moment (lease.go); otherwise the answer becomes 503
// unavailable. A renewal is answered once applied, before it is durable, so
// what makes it good across a takeover is that it was applied while this
// server owned the shard: the next owner is elected only after this server's
// lease expired, and it gives every lease that may have been renewed its
// full TTL from then (leasing.Service.Start). An owner paused or cut off
// between applying a renewal and answering it must therefore not answer it;
// checking at the status line, after the work is done, covers every request
// that began while the lease was fresh and ends after it went stale.
//
// When the lease is not known fresh at that moment (a keepalive late on a
// loaded machine), the answer waits for the next answered renewal, which
// proves the lease was alive when the work was done (awaitFresh), rather
// than fail a request that nothing threatened.
type freshWriter struct {
	http.ResponseWriter
	r       *http.Request
	fresh   func(context.Context) bool
	decided bool
	stale   bool
}

func (w *freshWriter) WriteHeader(status int) {
	if w.decided {
		if !w.stale {
			w.ResponseWriter.WriteHeader(status)
		}
		return
	}
	w.decided = true
	if w.fresh(w.r.Context()) {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.stale = true
	h := w.Header()
	for k := range h {
		if k != headerRequestID && k != HeaderServedBy {
			delete(h, k)
		}
	}
	unavailable(w.ResponseWriter, w.r, "this server stopped owning this tenant's shard while serving the request; its outcome is unknown; retry")
}

func (w *freshWriter) Write(b []byte) (int, error) {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	if w.stale {
		return len(b), nil // the answer was replaced
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends the status line first, so that a stream's first flush is
// checked like any other answer.
func (w *freshWriter) Flush() {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.stale {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (w *freshWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
