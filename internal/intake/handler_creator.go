package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// maxAnswerBytes bounds what the creator keeps of an answer: a created
// node or a problem, both far smaller.
const maxAnswerBytes = 1 << 20

// HandlerCreator creates nodes through Tether's own HTTP handler, in
// process: the request any client would send (POST /v1/nodes with an
// Idempotency-Key), so every validation, every limit and the idempotency of
// the API apply unchanged. Given the cluster's front handler, a request
// for a tenant whose shard another server owns is passed to that server.
type HandlerCreator struct {
	// Handler serves the API: the server's own (api.Server.Handler) or the
	// cluster's front.
	Handler http.Handler
	// Signer mints the token each request carries.
	Signer *Signer
}

// Create posts node as tenant under idempotencyKey and returns the id of
// the node made (or made first, on a repeat).
func (h *HandlerCreator) Create(ctx context.Context, tenant string, node json.RawMessage, idempotencyKey string) (string, error) {
	bearer, err := h.Signer.bearer(tenant)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/nodes", bytes.NewReader(node))
	if err != nil {
		return "", err
	}
	req.RemoteAddr = "127.0.0.1:0" // in process; the access log wants one
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idempotencyKey)
	w := &answer{header: http.Header{}}
	h.Handler.ServeHTTP(w, req)
	switch w.status() {
	case http.StatusCreated, http.StatusOK:
		var made struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(w.body.Bytes(), &made); err != nil || made.ID == "" {
			return "", fmt.Errorf("intake: the create answered %d without a node id", w.status())
		}
		return made.ID, nil
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict,
		http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return "", &Rejected{Status: w.status(), Reason: w.detail()}
	default:
		return "", fmt.Errorf("intake: the create answered %d: %s", w.status(), w.detail())
	}
}

// answer is the http.ResponseWriter an in-process request is served into.
type answer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }

func (a *answer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

func (a *answer) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	if room := maxAnswerBytes - a.body.Len(); len(p) > room {
		a.body.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return a.body.Write(p)
}

func (a *answer) status() int {
	if a.code == 0 {
		return http.StatusOK
	}
	return a.code
}

// detail is the problem's detail (or title), or the start of a body that
// is no problem.
func (a *answer) detail() string {
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(a.body.Bytes(), &p) == nil && (p.Detail != "" || p.Title != "") {
		if p.Detail == "" {
			return p.Title
		}
		return p.Detail
	}
	b := a.body.Bytes()
	return string(b[:min(len(b), 200)])
}
