package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/backup"
	"github.com/tether-run/tether/internal/fault"
)

// backup is GET /admin/backup: every record of every tenant as of one
// instant, in the backup stream format (package backup), for an operator
// token. The server keeps serving while it streams; writes go on and are
// not in this backup.
func (s *Server) backup(c echo.Context) error {
	if err := s.operator(c.Request()); err != nil {
		return err
	}
	w := c.Response()
	// A backup may take longer than the server's write timeout allows an
	// ordinary answer.
	if err := http.NewResponseController(w).SetWriteDeadline(time.Time{}); err != nil {
		s.log.Warn("a backup keeps the write timeout", "err", err)
	}
	name := fmt.Sprintf("tether-%s.backup", s.clock.Now().UTC().Format("20060102T150405Z"))
	w.Header().Set(echo.HeaderContentType, "application/octet-stream")
	w.Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	w.WriteHeader(http.StatusOK)
	var files backup.Files
	if s.blobs != nil {
		files = s.blobs
	}
	st, err := backup.Write(w, s.store.KV(), files)
	if err != nil {
		// The status line is gone: the stream ends without its trailer,
		// which a restore refuses.
		s.log.Error("a backup failed", "err", err, "records", st.Records)
		return nil
	}
	s.log.Info("backup taken", "records", st.Records, "blobs", st.Blobs, "bytes", st.Bytes)
	return nil
}

// operator checks r's bearer token against the operator tokens.
func (s *Server) operator(r *http.Request) error {
	tok, ok := strings.CutPrefix(r.Header.Get(echo.HeaderAuthorization), "Bearer ")
	if !ok || tok == "" {
		return &fault.Unauthorized{Reason: "an operator token is required (Authorization: Bearer <TETHER_OPERATOR_TOKENS entry>)"}
	}
	sum := sha256.Sum256([]byte(tok))
	for _, want := range s.operatorSums {
		if subtle.ConstantTimeCompare(sum[:], want[:]) == 1 {
			return nil
		}
	}
	return &fault.Unauthorized{Reason: "not an operator token"}
}
