package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLocalURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:36725": "http://127.0.0.1:36725",
		"0.0.0.0:36725":   "http://127.0.0.1:36725",
		"[::]:8080":       "http://127.0.0.1:8080",
		":9000":           "http://127.0.0.1:9000",
		"10.0.0.5:36725":  "http://10.0.0.5:36725",
		"[::1]:36725":     "http://[::1]:36725",
	} {
		require.Equal(t, want, localURL(addr), addr)
	}
}
