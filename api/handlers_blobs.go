package api

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/tenancy"
)

// blobTransferTimeout is how long a blob may take to arrive or leave, in
// place of the server's read and write timeouts (which suit small JSON
// bodies and long polls).
const blobTransferTimeout = 30 * time.Minute

// multipartSlack is what a multipart body may hold beyond the file: its
// boundaries and part headers.
const multipartSlack = 64 << 10

// blobRoutes registers the blob store.
func (s *Server) blobRoutes(v1 v1Router) {
	v1.add(http.MethodPost, "/blobs", s.uploadBlob, tenancy.RoleWorker)
	v1.add(http.MethodGet, "/blobs/:sha256", s.getBlob, tenancy.RoleReader)
}

type blobJSON struct {
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
}

// uploadBlob is POST /v1/blobs: a multipart/form-data body whose part
// "file" is the blob, or any other body, which is the blob itself. The
// body is streamed to disk (never through readBody, which holds a body in
// memory). 201 for a new blob, 200 for one the tenant had already.
func (s *Server) uploadBlob(c echo.Context) error {
	if s.blobs == nil {
		return fault.ErrUnavailable
	}
	if err := s.store.Full(); err != nil {
		// Its record would be refused after its file took the room the
		// store keeps for Badger: refused before a byte is written.
		return err
	}
	r := c.Request()
	limit := s.blobs.MaxBytes()
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	multi := mediaType == "multipart/form-data"
	slack := int64(0)
	if multi {
		slack = multipartSlack
	}
	if r.ContentLength > limit+slack {
		return &fault.TooLarge{Limit: limit}
	}
	// A large blob on a slow link outlasts the server's read timeout.
	_ = http.NewResponseController(c.Response()).SetReadDeadline(time.Now().Add(blobTransferTimeout))

	var body io.Reader
	var contentType string
	if multi {
		part, err := filePart(r)
		if err != nil {
			return err
		}
		defer part.Close()
		body, contentType = part, part.Header.Get("Content-Type")
	} else {
		body, contentType = r.Body, r.Header.Get("Content-Type")
	}
	ct, err := blob.ContentType(contentType)
	if err != nil {
		return err
	}
	p := principal(c)
	b, created, err := s.blobs.Put(r.Context(), blob.PutParams{Tenant: p.Tenant, By: p.Subject, ContentType: ct, Body: body})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.Response().Header().Set(echo.HeaderLocation, "/v1/blobs/"+b.SHA256)
	return writeJSON(c, status, blobJSON{SHA256: b.SHA256, Size: b.Size, ContentType: b.ContentType})
}

// filePart returns the first part of a multipart body, which must be named
// "file", positioned at its first byte; parts after it are not read.
func filePart(r *http.Request) (*multipart.Part, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, fault.Invalidf("Content-Type", "multipart/form-data needs a boundary parameter")
	}
	part, err := mr.NextPart()
	switch {
	case errors.Is(err, io.EOF):
		return nil, fault.Invalidf("file", "is required: the multipart body has no part named file")
	case err != nil:
		return nil, fault.Invalidf("", "the multipart body is malformed")
	}
	if part.FormName() == "file" {
		return part, nil
	}
	name := part.FormName()
	_ = part.Close()
	if len(name) > 64 {
		name = name[:64]
	}
	return nil, fault.Invalidf(name, "unknown field: the multipart body takes one part, named file")
}

// getBlob is GET /v1/blobs/{sha256}: the bytes, with Range,
// If-Range, If-None-Match and If-Modified-Since as http.ServeContent does
// them.
func (s *Server) getBlob(c echo.Context) error {
	if s.blobs == nil {
		return fault.ErrUnavailable
	}
	sha := strings.ToLower(c.Param("sha256"))
	if !blob.ValidSHA256(sha) {
		return fault.Invalidf("sha256", "must be 64 hex characters")
	}
	b, f, err := s.blobs.Get(principal(c).Tenant, sha)
	if err != nil {
		return err
	}
	defer f.Close()
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Now().Add(blobTransferTimeout))
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, b.ContentType)
	h.Set("ETag", `"`+b.SHA256+`"`)
	// A blob is whatever a tenant uploaded: never let a browser run it as
	// a page of this origin.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	w := &rangeGuard{ResponseWriter: c.Response()}
	http.ServeContent(w, c.Request(), "", b.CreatedAt, f)
	return nil
}

// rangeGuard answers http.ServeContent's 416 (a Range none of whose ranges
// overlap the blob) with a problem document instead of its plain text.
type rangeGuard struct {
	http.ResponseWriter
	failed bool
}

func (g *rangeGuard) WriteHeader(code int) {
	if code != http.StatusRequestedRangeNotSatisfiable {
		g.ResponseWriter.WriteHeader(code)
		return
	}
	g.failed = true
	p := newProblem(code, CodeRangeNotSatisfiable, "the Range header names no byte of the blob; Content-Range gives its size")
	p.RequestID = g.Header().Get(echo.HeaderXRequestID)
	b, _ := p.MarshalJSON()
	h := g.Header()
	h.Del("Content-Length")
	h.Set(echo.HeaderContentType, "application/problem+json")
	g.ResponseWriter.WriteHeader(code)
	_, _ = g.ResponseWriter.Write(b)
}

func (g *rangeGuard) Write(b []byte) (int, error) {
	if g.failed {
		return len(b), nil // ServeContent's own text, replaced
	}
	return g.ResponseWriter.Write(b)
}
