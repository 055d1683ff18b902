package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// The harness's own HTTP/1.1 client (-client raw, the default), in the way
// of wrk: one keep-alive connection per caller, a request written with one
// write(2), the answer read through one buffer. The harness shares the
// server's cores, so what its client costs is taken from the server: in (a)
// net/http's client (-client go) spent about 50 µs of CPU per request here,
// this one about 20. It speaks only what the server answers: a status line,
// headers, then a body of Content-Length bytes or in chunks.

// clients makes the connections of one stage's callers and closes them.
type clients struct {
	raw bool
	tr  *http.Transport // -client go
	hc  *http.Client

	mu   sync.Mutex
	open map[*rawConn]struct{}
}

// requestTimeout bounds one request (the longest is a 60 s long poll).
const requestTimeout = 90 * time.Second

func newClients(raw bool, conns int) *clients {
	tr := newTransport(conns)
	return &clients{raw: raw, tr: tr, hc: &http.Client{Transport: tr, Timeout: requestTimeout}, open: map[*rawConn]struct{}{}}
}

// closeAll closes every idle connection (callers in flight get an error).
func (cs *clients) closeAll() {
	cs.tr.CloseIdleConnections()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for rc := range cs.open {
		rc.close()
	}
	clear(cs.open)
}

// rawConn is one caller's connection to a server; dialled on first use and
// again after an error or a "Connection: close".
type rawConn struct {
	cs       *clients
	addr     string // host:port, also the Host header
	conn     net.Conn
	br       *bufio.Reader
	wbuf     []byte
	deadline time.Time
	used     time.Time // when the last answer was read
}

// idleRedial is how long a connection may sit unused before it is dialled
// again instead of reused: well inside the server's 120 s IdleTimeout, so
// a request is never written to a connection the server has closed for
// idleness.
const idleRedial = 60 * time.Second

func (cs *clients) rawConn(base string) (*rawConn, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("-client raw speaks plain http, not %s (use -client go)", u.Scheme)
	}
	return &rawConn{cs: cs, addr: u.Host, wbuf: make([]byte, 0, 1024)}, nil
}

func (rc *rawConn) close() {
	if rc.conn != nil {
		rc.conn.Close()
		rc.conn = nil
	}
}

func (rc *rawConn) drop() {
	rc.cs.mu.Lock()
	delete(rc.cs.open, rc)
	rc.cs.mu.Unlock()
	rc.close()
}

func (rc *rawConn) dial() error {
	c, err := net.DialTimeout("tcp", rc.addr, 5*time.Second)
	if err != nil {
		return err
	}
	rc.conn = c
	rc.deadline = time.Time{}
	if rc.br == nil {
		rc.br = bufio.NewReaderSize(c, 64<<10)
	} else {
		rc.br.Reset(c)
	}
	rc.cs.mu.Lock()
	rc.cs.open[rc] = struct{}{}
	rc.cs.mu.Unlock()
	return nil
}

// do sends one request and appends the answer's body to out. A GET or HEAD
// on a kept-alive connection that the server closed before answering is
// sent once more on a new one, as net/http does; anything else is an error.
func (rc *rawConn) do(method, path, auth string, body []byte, out *bytes.Buffer) (int, error) {
	now := time.Now()
	if rc.conn != nil && now.Sub(rc.used) > idleRedial {
		rc.drop()
	}
	fresh := rc.conn == nil
	if fresh {
		if err := rc.dial(); err != nil {
			return 0, err
		}
	}
	st, err := rc.roundTrip(now, method, path, auth, body, out)
	if err != nil {
		rc.drop()
		if !fresh && st == 0 && errors.Is(err, errReset) && (method == "GET" || method == "HEAD") {
			if err := rc.dial(); err != nil {
				return 0, err
			}
			if st, err = rc.roundTrip(now, method, path, auth, body, out); err != nil {
				rc.drop()
			}
		}
	}
	return st, err
}

// errReset is a connection closed by the server before any answer.
var errReset = errors.New("connection reset before an answer")

func (rc *rawConn) roundTrip(now time.Time, method, path, auth string, body []byte, out *bytes.Buffer) (int, error) {
	if rc.deadline.Sub(now) < requestTimeout/2 {
		rc.deadline = now.Add(requestTimeout)
		if err := rc.conn.SetDeadline(rc.deadline); err != nil {
			return 0, err
		}
	}
	b := rc.wbuf[:0]
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, rc.addr...)
	b = append(b, "\r\nAuthorization: "...)
	b = append(b, auth...)
	if body != nil {
		b = append(b, "\r\nContent-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
	}
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	rc.wbuf = b
	if _, err := rc.conn.Write(b); err != nil {
		if isReset(err) {
			return 0, errReset
		}
		return 0, err
	}
	return rc.readAnswer(method, out)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// readAnswer reads a status line, headers and body.
func (rc *rawConn) readAnswer(method string, out *bytes.Buffer) (int, error) {
	line, err := rc.line()
	if err != nil {
		if errors.Is(err, io.EOF) || isReset(err) {
			return 0, errReset
		}
		return 0, err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length, chunked, closing := -1, false, false
	for {
		h, err := rc.line()
		if err != nil {
			return status, err
		}
		if len(h) == 0 {
			break
		}
		colon := bytes.IndexByte(h, ':')
		if colon < 0 {
			return status, fmt.Errorf("bad header line %q", h)
		}
		name, value := h[:colon], bytes.TrimSpace(h[colon+1:])
		switch {
		case asciiEqualFold(name, "Content-Length"):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return status, fmt.Errorf("bad Content-Length %q", value)
			}
		case asciiEqualFold(name, "Transfer-Encoding"):
			chunked = asciiEqualFold(value, "chunked")
		case asciiEqualFold(name, "Connection"):
			closing = asciiEqualFold(value, "close")
		}
	}
	switch {
	case method == "HEAD" || status == http.StatusNoContent || status == http.StatusNotModified || status/100 == 1:
	case chunked:
		err = rc.chunks(out)
	case length >= 0:
		_, err = io.CopyN(out, rc.br, int64(length))
	default:
		_, err = out.ReadFrom(rc.br)
		closing = true
	}
	if err != nil {
		return status, err
	}
	rc.used = time.Now()
	if closing {
		rc.drop()
	}
	return status, nil
}

// chunks reads a chunked body (no trailers are expected).
func (rc *rawConn) chunks(out *bytes.Buffer) error {
	for {
		line, err := rc.line()
		if err != nil {
			return err
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			for { // trailers, up to the empty line
				t, err := rc.line()
				if err != nil || len(t) == 0 {
					return err
				}
			}
		}
		if _, err := io.CopyN(out, rc.br, n); err != nil {
			return err
		}
		if crlf, err := rc.line(); err != nil || len(crlf) != 0 {
			return fmt.Errorf("chunk not followed by CRLF: %v", err)
		}
	}
}

// line is the next line without its CRLF; valid until the next read.
func (rc *rawConn) line() ([]byte, error) {
	l, err := rc.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("header line longer than 64 KiB")
		}
		return nil, err
	}
	l = l[:len(l)-1]
	if n := len(l); n > 0 && l[n-1] == '\r' {
		l = l[:n-1]
	}
	return l, nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
