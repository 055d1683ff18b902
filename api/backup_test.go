package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/backup"
	"github.com/tether-run/tether/internal/server"
)

// GET /admin/backup answers an operator token with a whole backup stream,
// and anyone else, a tenant admin included, with 401.
func TestBackupNeedsAnOperatorToken(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *server.Config) { c.OperatorTokens = []string{"op-secret"} })
	e.mustCreate(task("b1"))
	for _, tok := range []string{"", e.token("acme", "root", "admin"), "op-wrong"} {
		res, body := e.raw(http.MethodGet, "/admin/backup", tok, "", "")
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, "token %q: %s", tok, body)
	}
	res, body := e.raw(http.MethodGet, "/admin/backup", "op-secret", "", "")
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	require.Equal(t, "application/octet-stream", res.Header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Disposition"), `attachment; filename="tether-`))
	st, err := backup.Verify(bytes.NewReader(body))
	require.NoError(t, err)
	require.Positive(t, st.Records)
}
