//go:build linux

package kv

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable without its timestamps: the segment is
// already allocated, so nothing else about it changes.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
