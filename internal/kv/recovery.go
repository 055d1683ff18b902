package kv

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// removeCrashLeftovers deletes the files of no length that a crash inside
// Badger's file creation leaves in dir, before Badger sees them: every
// zero-length memtable file (*.mem) and, when it is the newest, a
// zero-length value-log file (*.vlog).
//
// Badger makes both kinds of file in two steps: it creates the file, then
// sizes it (and writes its header through a map) on first use. It makes a
// new memtable file at every rotation and at every open, and a new value-log
// file at every open. A crash between the two steps (kill -9 during a
// start, a power failure after a rotation) leaves a file with no length,
// which holds no data by construction; Badger then refuses to open
// ("Create a new file"). The newest value-log file is the only one a crash
// can leave so: Badger makes the next one only after an open that got past
// this one. A value log of no length that is not the newest is something
// else, and is left for Badger to refuse. Every value Tether writes stays in
// Badger's tables (valueThreshold), so no table points into a value log.
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
	var empty []string
	newestVlog, newestFid := "", int64(-1)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		if fid, ok := vlogFid(name); ok && fid > newestFid {
			newestVlog, newestFid = name, fid
		}
		if strings.HasSuffix(name, ".mem") && isEmptyFile(e) {
			empty = append(empty, name)
		}
	}
	for _, e := range entries {
		if e.Name() == newestVlog && isEmptyFile(e) {
			empty = append(empty, newestVlog)
		}
	}
	for _, name := range empty {
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("error removing the empty file %s: %w", path, err)
		}
		log.Warn("removed an empty badger file left by a crash", "file", path)
	}
	return nil
}

// vlogFid is the file id in a value-log file's name (Badger's "%06d.vlog").
func vlogFid(name string) (int64, bool) {
	id, ok := strings.CutSuffix(name, ".vlog")
	if !ok {
		return 0, false
	}
	fid, err := strconv.ParseUint(id, 10, 32)
	return int64(fid), err == nil
}

func isEmptyFile(e os.DirEntry) bool {
	info, err := e.Info()
	return err == nil && info.Mode().IsRegular() && info.Size() == 0
}
