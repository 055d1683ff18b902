//go:build !linux

package kv

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
