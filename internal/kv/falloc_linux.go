//go:build linux

package kv

import (
	"os"

	"golang.org/x/sys/unix"
)

// fallocateKeepSize allocates the blocks of f's first size bytes without
// changing its length: blocks past its end stay allocated when it grows.
func fallocateKeepSize(f *os.File, size int64) error {
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size)
}
