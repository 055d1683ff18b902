package cluster

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// problem is the API's problem+json document (api.Problem), for the
// answers the front gives itself.
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Detail    string `json:"detail,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// writeProblem answers status with a problem of code; retryAfter > 0 adds
// Retry-After (seconds).
func writeProblem(w http.ResponseWriter, r *http.Request, status int, code, detail string, retryAfter int) {
	p := problem{
		Type: "urn:tether:problem:" + code, Title: http.StatusText(status), Status: status, Code: code,
		Detail: detail, RequestID: w.Header().Get(headerRequestID),
	}
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tether"`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		b, _ := json.Marshal(p)
		_, _ = w.Write(b)
	}
}

// unavailable answers 503 unavailable with Retry-After: 1.
func unavailable(w http.ResponseWriter, r *http.Request, detail string) {
	writeProblem(w, r, http.StatusServiceUnavailable, "unavailable", detail, 1)
}
