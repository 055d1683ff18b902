//go:build linux

package kv

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// fallocateKeepSize allocates the blocks of f's first size bytes without
// changing its length: blocks past its end stay allocated when it grows. A
// filesystem that cannot (some network and FUSE ones) leaves the file
// sparse: the free-space reserve alone guards it then.
func fallocateKeepSize(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return nil
	}
	return err
}
