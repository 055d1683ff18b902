package memlimit

import (
	"log/slog"
	"math"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// The runtime's limit is process-wide: the tests that read or set it do not
// run in parallel, and each puts back the limit it found.
func keepRuntimeLimit(t *testing.T) {
	was := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
}

func TestDecide(t *testing.T) {
	v2 := filepath.Join("testdata", "v2")
	none := filepath.Join("testdata", "no-cgroupfs")

	c, err := Decide("2GiB", "1GiB", v2)
	require.NoError(t, err)
	require.Equal(t, Choice{Bytes: 2 << 30, Source: FromSetting}, c, "the setting wins over GOMEMLIMIT and the cgroup")

	c, err = Decide("off", "1GiB", v2)
	require.NoError(t, err)
	require.Equal(t, Choice{Bytes: 0, Source: FromSetting}, c)

	c, err = Decide("", "", v2)
	require.NoError(t, err)
	require.Equal(t, FromCgroup, c.Source)
	require.Equal(t, int64(483183820), c.Bytes, "90 % of 512MiB")
	require.Equal(t, int64(512<<20), c.CgroupBytes)
	require.Equal(t, "/sys/fs/cgroup/kubepods/pod1/memory.max", c.CgroupFile)

	c, err = Decide("", "", none)
	require.NoError(t, err)
	require.Equal(t, Choice{Source: FromNone}, c)

	// An unreadable cgroup is no limit, with the reason kept for the log.
	c, err = Decide("", "", filepath.Join("testdata", "malformed"))
	require.NoError(t, err)
	require.Equal(t, FromNone, c.Source)
	require.Zero(t, c.Bytes)
	require.ErrorContains(t, c.CgroupErr, "not a byte count")

	for _, bad := range []string{"2GB", "-1", "1MiB", "31MiB"} {
		_, err := Decide(bad, "", v2)
		require.Error(t, err, bad)
	}
}

func TestDecideReportsGOMEMLIMIT(t *testing.T) {
	keepRuntimeLimit(t)
	debug.SetMemoryLimit(700 << 20) // as the runtime would have from GOMEMLIMIT=700MiB
	c, err := Decide("", "700MiB", filepath.Join("testdata", "v2"))
	require.NoError(t, err)
	require.Equal(t, Choice{Bytes: 700 << 20, Source: FromGOMEMLIMIT}, c)
	c.Apply()
	require.Equal(t, int64(700<<20), debug.SetMemoryLimit(-1), "Apply leaves the runtime's own GOMEMLIMIT")
}

func TestApply(t *testing.T) {
	keepRuntimeLimit(t)
	Choice{Bytes: 3 << 30, Source: FromSetting}.Apply()
	require.Equal(t, int64(3<<30), debug.SetMemoryLimit(-1))
	Choice{Bytes: 966367641, Source: FromCgroup}.Apply()
	require.Equal(t, int64(966367641), debug.SetMemoryLimit(-1))
	// off lifts any limit, GOMEMLIMIT's included.
	Choice{Source: FromSetting}.Apply()
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}

func TestLogAttrs(t *testing.T) {
	t.Parallel()
	c := Choice{Bytes: 900 << 20, Source: FromCgroup, CgroupBytes: 1000 << 20, CgroupFile: "/sys/fs/cgroup/memory.max"}
	require.Equal(t, []any{"source", "cgroup", "limit", "900.00MiB", "limit_bytes", int64(900 << 20), "cgroup_limit", "1000.00MiB", "cgroup_file", "/sys/fs/cgroup/memory.max"}, attrStrings(c.LogAttrs()))
	require.Equal(t, []any{"source", "none", "limit", "none"}, attrStrings(Choice{Source: FromNone}.LogAttrs()))
}

// attrStrings flattens slog attributes to key, value, key, value.
func attrStrings(attrs []any) []any {
	var out []any
	for _, a := range attrs {
		at := a.(slog.Attr)
		out = append(out, at.Key, at.Value.Any())
	}
	return out
}
