package memlimit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{
		"0":          0,
		"off":        0,
		"OFF":        0,
		"1048576":    1 << 20,
		"512B":       512,
		"64KiB":      64 << 10,
		"900MiB":     900 << 20,
		"2GiB":       2 << 30,
		" 2GiB ":     2 << 30,
		"2 GiB":      2 << 30,
		"1.5GiB":     3 << 29,
		"1TiB":       1 << 40,
		"8388607TiB": 8388607 << 40,
	} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "GiB", "-1", "-1GiB", "+5", "2GB", "2G", "1e9", "1.5", "lots", "8388608TiB", "9223372036854775808", "NaNGiB", "InfGiB"} {
		_, err := ParseSize(in)
		require.Error(t, err, "%q", in)
	}
}

func TestFormatSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0:             "0B",
		1000:          "1000B",
		1 << 10:       "1.00KiB",
		3 << 29:       "1.50GiB",
		900 << 20:     "900.00MiB",
		5 << 40:       "5.00TiB",
		1<<30 + 1<<20: "1.00GiB",
	} {
		require.Equal(t, want, FormatSize(n), n)
	}
}
