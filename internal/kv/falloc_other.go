//go:build !linux

package kv

import "os"

// fallocateKeepSize does nothing where Linux's fallocate is missing: Badger's
// memtable files stay sparse there, guarded by the free-space reserve alone.
func fallocateKeepSize(*os.File, int64) error { return nil }
