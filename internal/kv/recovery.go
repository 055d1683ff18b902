package kv

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// removeEmptyMemtables deletes zero-length memtable files (*.mem) in dir.
//
// Badger creates a memtable's write-ahead log when it rotates to it and
// sizes it on first use; a power failure in between can leave the file with
// no length, which holds no data by construction, yet Badger then refuses to
// open ("while opening memtables ... Create a new file"). This is the one
// place Tether looks at Badger's files, and only to get past that refusal.
func removeEmptyMemtables(dir string, log *slog.Logger) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error listing %s: %w", dir, err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".mem") || e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() != 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("error removing the empty memtable file %s: %w", path, err)
		}
		log.Warn("removed an empty memtable file left by a crash", "file", path)
	}
	return nil
}
