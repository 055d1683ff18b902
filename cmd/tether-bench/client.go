package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// benchTenant is the tenant every benchmark token names when there is one
// tenant; with more, tenant t is benchTenant-t (see tenantName).
const benchTenant = "bench"

// tenantName is the name of tenant t of n.
func tenantName(n, t int) string {
	if n <= 1 {
		return benchTenant
	}
	return fmt.Sprintf("%s-%02d", benchTenant, t)
}

// mint is an HS256 JWT for sub in tenant, valid for a day.
func mint(secret, sub, tenant string, roles ...string) (string, error) {
	claims := jwt.MapClaims{"sub": sub, "tid": tenant, "exp": time.Now().Add(24 * time.Hour).Unix()}
	if len(roles) > 0 {
		claims["roles"] = roles
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
}

// newTransport is an HTTP/1.1 keep-alive transport that holds an idle
// connection for each of conns concurrent callers, so that no request pays
// for a new connection.
func newTransport(conns int) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   false,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      64 << 10,
	}
}

// caller is one identity talking to one server: its token, and a buffer the
// answers are read into (valid until the next request). One goroutine each.
type caller struct {
	base string
	auth string
	hc   *http.Client // -client go
	raw  *rawConn     // -client raw
	buf  bytes.Buffer
}

func newCaller(base, token string, cs *clients) *caller {
	c := &caller{base: base, auth: "Bearer " + token, hc: cs.hc}
	if cs.raw {
		rc, err := cs.rawConn(base)
		if err != nil { // base is a server's own http URL; see rawConn
			panic(err)
		}
		c.raw = rc
	}
	c.buf.Grow(64 << 10)
	return c
}

// do sends one request and reads the whole answer (so that the connection
// is reused). The returned body is only valid until the next call.
func (c *caller) do(method, path string, body []byte) (int, []byte, error) {
	if c.raw != nil {
		c.buf.Reset()
		st, err := c.raw.do(method, path, c.auth, body, &c.buf)
		if err != nil {
			return st, nil, err
		}
		return st, c.buf.Bytes(), nil
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header["Content-Type"] = []string{"application/json"}
	}
	req.Header["Authorization"] = []string{c.auth}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	c.buf.Reset()
	_, err = c.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, c.buf.Bytes(), nil
}

// must sends a request that has to answer want; anything else is an error
// naming the answer.
func (c *caller) must(method, path string, body []byte, want int) ([]byte, error) {
	st, b, err := c.do(method, path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if st != want {
		return nil, fmt.Errorf("%s %s: status %d, want %d: %.300s", method, path, st, want, b)
	}
	return b, nil
}

// errKey names a failed answer: the status and the problem's code.
func errKey(status int, body []byte, err error) string {
	if err != nil {
		return "transport"
	}
	var p struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(body, &p) == nil && p.Code != "" {
		return strconv.Itoa(status) + " " + p.Code
	}
	return strconv.Itoa(status)
}

// claimed is the part of a lease the benchmark needs.
type claimed struct {
	id      string
	fence   int64
	expires int64 // Unix ms
}

var (
	leaseKey     = []byte(`"lease":{"node_id":"`)
	itemLeaseKey = []byte(`{"lease":{"node_id":"`)
	fenceKey     = []byte(`"fence":`)
	expiresKey   = []byte(`"expires":`)
)

// parseClaim reads the lease of a claim answer ({"edge", "lease", "node",
// ...}). It scans instead of decoding the whole node: the first "lease"
// object is the top-level one (keys are sorted, and the edge has none). It
// falls back to encoding/json if the shape is not the expected one.
func parseClaim(b []byte) (claimed, bool) {
	if i := bytes.Index(b, leaseKey); i >= 0 {
		if c, _, ok := leaseAt(b[i+len(leaseKey):]); ok {
			return c, true
		}
	}
	var v struct {
		Lease leaseFields `json:"lease"`
	}
	if json.Unmarshal(b, &v) != nil || v.Lease.NodeID == "" {
		return claimed{}, false
	}
	return v.Lease.claimed(), true
}

// parseClaims reads the leases of a claims answer ({"items": [{"lease",
// "node"}]}). An item's own lease follows '{' directly; the copy inside its
// node follows a comma.
func parseClaims(b []byte, out []claimed) ([]claimed, bool) {
	out = out[:0]
	rest := b
	for {
		i := bytes.Index(rest, itemLeaseKey)
		if i < 0 {
			break
		}
		c, r, ok := leaseAt(rest[i+len(itemLeaseKey):])
		if !ok {
			return parseClaimsJSON(b, out[:0])
		}
		out = append(out, c)
		rest = r
	}
	if len(out) == 0 && !bytes.Contains(b, []byte(`"items":[]`)) {
		return parseClaimsJSON(b, out)
	}
	return out, true
}

func parseClaimsJSON(b []byte, out []claimed) ([]claimed, bool) {
	var v struct {
		Items []struct {
			Lease leaseFields `json:"lease"`
		} `json:"items"`
	}
	if json.Unmarshal(b, &v) != nil {
		return out, false
	}
	for _, it := range v.Items {
		out = append(out, it.Lease.claimed())
	}
	return out, true
}

type leaseFields struct {
	NodeID  string `json:"node_id"`
	Fence   int64  `json:"fence"`
	Expires int64  `json:"expires"`
}

func (l leaseFields) claimed() claimed {
	return claimed{id: l.NodeID, fence: l.Fence, expires: l.Expires}
}

// leaseAt reads a lease object whose node_id string starts at b.
func leaseAt(b []byte) (claimed, []byte, bool) {
	end := bytes.IndexByte(b, '"')
	if end <= 0 {
		return claimed{}, nil, false
	}
	c := claimed{id: string(b[:end])}
	b = b[end:]
	var ok bool
	if c.fence, b, ok = intAfter(b, fenceKey); !ok {
		return claimed{}, nil, false
	}
	if c.expires, b, ok = intAfter(b, expiresKey); !ok {
		return claimed{}, nil, false
	}
	return c, b, true
}

// intAfter parses the integer that follows the first key in b.
func intAfter(b, key []byte) (int64, []byte, bool) {
	i := bytes.Index(b, key)
	if i < 0 {
		return 0, nil, false
	}
	b = b[i+len(key):]
	var n int64
	j := 0
	for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
		n = n*10 + int64(b[j]-'0')
	}
	if j == 0 {
		return 0, nil, false
	}
	return n, b[j:], true
}

// count200 counts the ops of a POST /v1/batch answer that succeeded: each
// result is {"id", "status": <int>, "body"}; a failed op's problem body
// repeats its (non-200) status, and node statuses are strings.
func count200(b []byte) int { return bytes.Count(b, []byte(`"status":200`)) }

// fenceBody is {"fence":N} appended to dst.
func fenceBody(dst []byte, fence int64) []byte {
	dst = append(dst[:0], `{"fence":`...)
	dst = strconv.AppendInt(dst, fence, 10)
	return append(dst, '}')
}
