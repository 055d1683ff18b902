package memlimit

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCgroupLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir   string
		bytes int64
		file  string
	}{
		// The container's memory.max says max; its pod's limit applies.
		{"v2", 512 << 20, "/sys/fs/cgroup/kubepods/pod1/memory.max"},
		{"v2-namespace", 2 << 30, "/sys/fs/cgroup/memory.max"},
		{"v2-outside", 256 << 20, "/sys/fs/cgroup/memory.max"},
		// The memory controller on v1, beside a v2 mount without it.
		{"v1", 1 << 30, "/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes"},
		{"v1-unlimited", 0, ""},
		{"no-cgroupfs", 0, ""},
		{"escaped", 128 << 20, "/sys/fs/my cgroup/memory.max"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			bytes, file, err := CgroupLimit(filepath.Join("testdata", tc.dir))
			require.NoError(t, err)
			require.Equal(t, tc.bytes, bytes)
			require.Equal(t, tc.file, file)
		})
	}
}

func TestCgroupLimitErrors(t *testing.T) {
	t.Parallel()
	_, _, err := CgroupLimit(filepath.Join("testdata", "malformed"))
	require.ErrorContains(t, err, `"lots" is not a byte count`)
	_, _, err = CgroupLimit(t.TempDir())
	require.ErrorContains(t, err, "error reading the process's cgroup")
}
