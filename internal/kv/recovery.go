package kv

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// removeCrashLeftovers deletes the memtable (*.mem) and value-log (*.vlog)
// files of no length in dir, before Badger sees them.
//
// Badger makes both kinds of file in two steps: it creates the file, then
// sizes it (and writes its header through a map). It makes a memtable file
// at every rotation and at every open, and a value-log file at every open.
// It deletes them in two steps too: it truncates the file to nothing, then
// removes it (a flushed memtable; at open, the value logs that hold only a
// header). A crash between two such steps (kill -9 during a start, a power
// failure after a rotation) leaves a file with no length, which holds no
// data by construction; Badger then refuses to open ("Create a new file").
// No table points into a value log either way: every value Tether writes
// stays in Badger's tables (valueThreshold).
//
// This is the one place Tether looks at Badger's files, and only to get
// past that refusal.
func removeCrashLeftovers(dir string, log *slog.Logger) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error listing %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".mem") && !strings.HasSuffix(name, ".vlog") {
			continue
		}
		if info, err := e.Info(); err != nil || !info.Mode().IsRegular() || info.Size() != 0 {
			continue
		}
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("error removing the empty file %s: %w", path, err)
		}
		log.Warn("removed an empty badger file left by a crash", "file", path)
	}
	return nil
}
