package blob

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// The bytes of a blob are one file, dir/<tenant>/<sha[:2]>/<sha>; an upload
// is written to dir/.tmp first. Tenant ids ([a-z0-9][a-z0-9_-]{0,62}) and
// sha256s (64 lowercase hex) are safe path parts, and no tenant id starts
// with a dot, so .tmp is no tenant's directory.

const tmpDir = ".tmp"

func (s *Service) path(tenant, sha string) string { return PathIn(s.dir, tenant, sha) }

// PathIn is where a blob's file lives under the blob directory dir.
func PathIn(dir, tenant, sha string) string {
	return filepath.Join(dir, tenant, sha[:2], sha)
}

// DirIn is the blob directory of a data directory.
func DirIn(dataDir string) string { return filepath.Join(dataDir, "blobs") }

// Hold keeps every blob file in place until release is called: a
// collection meanwhile deletes the record at once but leaves the file to
// release, so a backup reading files named by an older snapshot finds them
// all. Holds nest.
func (s *Service) Hold() (release func()) {
	s.holdMu.Lock()
	s.holds++
	s.holdMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.holdMu.Lock()
			s.holds--
			var now []string
			if s.holds == 0 {
				now, s.deferred = s.deferred, nil
			}
			s.holdMu.Unlock()
			for _, p := range now {
				s.removeFile(p)
			}
		})
	}
}

// OpenFile opens a blob's file for reading, whether or not a record names
// it now (a backup reads files its snapshot named; see Hold).
func (s *Service) OpenFile(tenant, sha string) (*os.File, error) {
	return os.Open(s.path(tenant, sha))
}

// removeFile removes a collected blob's file, or, while a Hold is on,
// leaves it for the hold's release.
func (s *Service) removeFile(p string) {
	s.holdMu.Lock()
	if s.holds > 0 {
		s.deferred = append(s.deferred, p)
		s.holdMu.Unlock()
		return
	}
	s.holdMu.Unlock()
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("error removing a collected blob's file", "path", p, "err", err)
	}
}

// mkdirSynced makes dir and any missing parent, fsyncing the directory that
// gains each new name, so a rename into dir that is then synced survives a
// power failure.
func mkdirSynced(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirSynced(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// tidy runs at open: it empties tmp (uploads a crash cut short) and removes
// every blob file with no record (written by an upload that crashed before
// its record was durable, or left by a collection that crashed before it
// removed the file). known holds the paths that have a record.
func (s *Service) tidy(known map[string]bool) (removed int, err error) {
	if err := os.RemoveAll(filepath.Join(s.dir, tmpDir)); err != nil {
		return 0, err
	}
	if err := mkdirSynced(filepath.Join(s.dir, tmpDir)); err != nil {
		return 0, err
	}
	err = filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == filepath.Join(s.dir, tmpDir) {
				return filepath.SkipDir
			}
			return nil
		}
		if known[p] {
			return nil
		}
		removed++
		return os.Remove(p)
	})
	return removed, err
}
