package lazyfs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tether-run/tether/internal/testskip"
)

func TestMain(m *testing.M) {
	// The mmap and Badger tests run their file work in a child process: a
	// page fault on a mapping of this FUSE mount, taken in the process that
	// serves it, can stall the very threads that would answer it.
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h, os.Getenv(helperDirEnv), os.Args))
	}
	os.Exit(m.Run())
}

// mounted is a lazyfs mount for one test, remountable after a crash.
type mounted struct {
	t       *testing.T
	rule    DirRule
	backing string
	mnt     string
	fs      *FS
}

func mount(t *testing.T, rule DirRule) *mounted {
	t.Helper()
	if err := Available(); err != nil {
		testskip.Missing(t, "FUSE", err.Error())
	}
	base := t.TempDir()
	m := &mounted{t: t, rule: rule, backing: filepath.Join(base, "backing"), mnt: filepath.Join(base, "mnt")}
	if err := os.Mkdir(m.backing, 0o755); err != nil {
		t.Fatal(err)
	}
	m.remount()
	t.Cleanup(func() {
		if m.fs != nil && !m.fs.done.Load() {
			if err := m.fs.Unmount(); err != nil {
				t.Errorf("unmount: %v", err)
			}
		}
	})
	return m
}

func (m *mounted) remount() {
	m.t.Helper()
	fs, err := Mount(m.backing, m.mnt, Options{Dirs: m.rule})
	if err != nil {
		m.t.Fatalf("mount: %v", err)
	}
	m.fs = fs
}

// crash crashes and remounts.
func (m *mounted) crash() {
	m.t.Helper()
	if err := m.fs.Crash(); err != nil {
		m.t.Fatalf("crash: %v", err)
	}
	m.remount()
}

func (m *mounted) path(name string) string { return filepath.Join(m.mnt, name) }

func (m *mounted) backingPath(name string) string { return filepath.Join(m.backing, name) }

// write creates (or truncates) name with data; sync fsyncs it before close.
func (m *mounted) write(name string, data []byte, sync bool) {
	m.t.Helper()
	f, err := os.OpenFile(m.path(name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		m.t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		m.t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			m.t.Fatalf("fsync %s: %v", name, err)
		}
	}
	if err := f.Close(); err != nil {
		m.t.Fatal(err)
	}
}

func (m *mounted) syncDir(name string) {
	m.t.Helper()
	d, err := os.Open(m.path(name))
	if err != nil {
		m.t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		m.t.Fatalf("fsync dir %s: %v", name, err)
	}
}

func (m *mounted) syncFile(name string) {
	m.t.Helper()
	f, err := os.OpenFile(m.path(name), os.O_RDWR, 0)
	if err != nil {
		m.t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		m.t.Fatalf("fsync %s: %v", name, err)
	}
}

// want checks name's content through the mount and in the backing directory
// (nil: absent from both).
func (m *mounted) want(name string, data []byte) {
	m.t.Helper()
	for _, p := range []string{m.path(name), m.backingPath(name)} {
		got, err := os.ReadFile(p)
		switch {
		case data == nil && errors.Is(err, os.ErrNotExist):
		case data == nil:
			m.t.Errorf("%s: exists (%d bytes, err %v), want it absent", p, len(got), err)
		case err != nil:
			m.t.Errorf("%s: %v, want %d bytes", p, err, len(data))
		case !bytes.Equal(got, data):
			m.t.Errorf("%s: %q, want %q", p, short(got), short(data))
		}
	}
}

// live checks name's content through the mount only.
func (m *mounted) live(name string, data []byte) {
	m.t.Helper()
	got, err := os.ReadFile(m.path(name))
	if err != nil || !bytes.Equal(got, data) {
		m.t.Errorf("%s: %q %v, want %q", name, short(got), err, short(data))
	}
}

func short(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

func rules(t *testing.T, f func(t *testing.T, rule DirRule)) {
	for _, r := range []DirRule{Lenient, Strict} {
		t.Run(r.String(), func(t *testing.T) { f(t, r) })
	}
}

func TestUnsyncedWriteIsLost(t *testing.T) {
	rules(t, func(t *testing.T, rule DirRule) {
		m := mount(t, rule)
		m.write("a", []byte("version one"), true)
		m.syncDir(".")
		// Overwrite and append, close without fsync: visible, not durable.
		m.write("a", []byte("version two, longer"), false)
		got, err := os.ReadFile(m.path("a"))
		if err != nil || string(got) != "version two, longer" {
			t.Fatalf("read back %q %v", got, err)
		}
		// A new file nobody synced.
		m.write("b", []byte("never synced"), false)
		m.crash()
		m.want("a", []byte("version one"))
		m.want("b", nil)
		if st := m.fs.Stats(); st != (Stats{}) {
			t.Errorf("fresh mount stats %+v", st)
		}
	})
}

func TestFsyncKeepsData(t *testing.T) {
	rules(t, func(t *testing.T, rule DirRule) {
		m := mount(t, rule)
		data := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16000 bytes: pages and a tail
		m.write("f", data, true)
		m.crash()
		if rule == Strict {
			// The entry was never made durable: the file is gone.
			m.want("f", nil)
			m.write("f", data, true)
			m.syncDir(".")
			m.crash()
		}
		m.want("f", data)

		// An fsync of an unrelated file makes no other entry durable.
		m.write("g", []byte("g"), false)
		m.write("h", []byte("h"), true)
		m.crash()
		m.want("g", nil)
		if rule == Lenient {
			m.want("h", []byte("h"))
		} else {
			m.want("h", nil)
		}
	})
}

func TestNewFileEntryWithoutData(t *testing.T) {
	rules(t, func(t *testing.T, rule DirRule) {
		// The directory is synced after the file was created but before its
		// data was: the file survives, empty (the classic zero-length file).
		m := mount(t, rule)
		f, err := os.Create(m.path("wal"))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(1 << 20); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("record"), 0); err != nil {
			t.Fatal(err)
		}
		m.syncDir(".")
		f.Close()
		m.crash()
		m.want("wal", []byte{})
	})
}

func TestTruncate(t *testing.T) {
	rules(t, func(t *testing.T, rule DirRule) {
		m := mount(t, rule)
		orig := bytes.Repeat([]byte{'o'}, 10000)
		m.write("t", orig, true)
		m.syncDir(".")

		f, err := os.OpenFile(m.path("t"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(100); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(5000); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("xyz"), 8000); err != nil {
			t.Fatal(err)
		}
		want := make([]byte, 8003)
		copy(want, orig[:100])
		copy(want[8000:], "xyz")
		got, err := os.ReadFile(m.path("t"))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after shrink and grow: %d bytes %v, want 100 x 'o', zeros, xyz at 8000", len(got), err)
		}
		f.Close()
		m.crash()
		m.want("t", orig) // none of it was synced

		f, err = os.OpenFile(m.path("t"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(100); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(5000); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("xyz"), 8000); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		m.crash()
		m.want("t", want)
	})
}

func TestRename(t *testing.T) {
	rules(t, func(t *testing.T, rule DirRule) {
		// MANIFEST rewrite: write a new file, fsync it, rename it over the
		// old one, and only then (maybe) fsync the directory.
		m := mount(t, rule)
		m.write("MANIFEST", []byte("old"), true)
		m.syncDir(".")

		m.write("MANIFEST-REWRITE", []byte("new"), true)
		if err := os.Rename(m.path("MANIFEST-REWRITE"), m.path("MANIFEST")); err != nil {
			t.Fatal(err)
		}
		m.live("MANIFEST", []byte("new"))
		m.crash()
		// The rename was never made durable.
		m.want("MANIFEST", []byte("old"))
		if rule == Lenient {
			m.want("MANIFEST-REWRITE", []byte("new")) // its fsync made its name durable
		} else {
			m.want("MANIFEST-REWRITE", nil)
		}

		// Rename, then fsync the file: durable only under the lenient rule.
		m.write("MANIFEST-REWRITE", []byte("newer"), true)
		if err := os.Rename(m.path("MANIFEST-REWRITE"), m.path("MANIFEST")); err != nil {
			t.Fatal(err)
		}
		m.syncFile("MANIFEST")
		m.crash()
		if rule == Lenient {
			m.want("MANIFEST", []byte("newer"))
			m.want("MANIFEST-REWRITE", nil)
		} else {
			m.want("MANIFEST", []byte("old"))
		}

		// Rename, then fsync the directory: durable under both.
		m.write("MANIFEST-REWRITE", []byte("newest"), true)
		if err := os.Rename(m.path("MANIFEST-REWRITE"), m.path("MANIFEST")); err != nil {
			t.Fatal(err)
		}
		m.syncDir(".")
		m.crash()
		m.want("MANIFEST", []byte("newest"))
		m.want("MANIFEST-REWRITE", nil)
	})
}

func TestUnlink(t *testing.T) {
	rules(t, func(t *testing.T, rule DirRule) {
		m := mount(t, rule)
		m.write("u", []byte("data"), true)
		m.syncDir(".")
		if err := os.Remove(m.path("u")); err != nil {
			t.Fatal(err)
		}
		m.crash()
		m.want("u", []byte("data"))
		if err := os.Remove(m.path("u")); err != nil {
			t.Fatal(err)
		}
		m.syncDir(".")
		m.crash()
		m.want("u", nil)
	})
}

func TestDirectories(t *testing.T) {
	rules(t, func(t *testing.T, rule DirRule) {
		m := mount(t, rule)
		if err := os.Mkdir(m.path("d"), 0o755); err != nil {
			t.Fatal(err)
		}
		m.write("d/f", []byte("in d"), true)
		m.syncDir("d")
		m.crash()
		if rule == Lenient {
			// A directory's fsync makes its own entry durable too.
			m.want("d/f", []byte("in d"))
		} else {
			// d/f is durable inside d, but d itself is not.
			m.want("d/f", nil)
			if _, err := os.Stat(m.backingPath("d")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("d exists after a crash before the root was synced: %v", err)
			}
			if err := os.Mkdir(m.path("d"), 0o755); err != nil {
				t.Fatal(err)
			}
			m.write("d/f", []byte("in d"), true)
			m.syncDir("d")
			m.syncDir(".")
		}
		// Move the directory; the move is durable once either side is synced.
		if err := os.Rename(m.path("d"), m.path("e")); err != nil {
			t.Fatal(err)
		}
		m.crash()
		m.want("d/f", []byte("in d"))
		m.want("e/f", nil)
		if err := os.Rename(m.path("d"), m.path("e")); err != nil {
			t.Fatal(err)
		}
		m.syncDir(".")
		m.crash()
		m.want("d/f", nil)
		m.want("e/f", []byte("in d"))

		// rmdir of a directory whose file's removal was not synced.
		if err := os.Remove(m.path("e/f")); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(m.path("e")); err != nil {
			t.Fatal(err)
		}
		m.syncDir(".")
		m.crash()
		if _, err := os.Stat(m.backingPath("e")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("e exists after its removal was synced: %v", err)
		}
	})
}

func TestUnmountPersistsEverything(t *testing.T) {
	rules(t, func(t *testing.T, rule DirRule) {
		m := mount(t, rule)
		if err := os.Mkdir(m.path("d"), 0o755); err != nil {
			t.Fatal(err)
		}
		m.write("d/a", []byte("unsynced a"), false)
		m.write("b", []byte("unsynced b"), false)
		if err := m.fs.Unmount(); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{"d/a": "unsynced a", "b": "unsynced b"} {
			got, err := os.ReadFile(m.backingPath(name))
			if err != nil || string(got) != want {
				t.Errorf("%s after a clean unmount: %q %v, want %q", name, got, err, want)
			}
		}
		m.remount()
		m.want("d/a", []byte("unsynced a"))
	})
}

func TestRenameExchangeAndNoReplace(t *testing.T) {
	m := mount(t, Lenient)
	m.write("x", []byte("x"), false)
	m.write("y", []byte("y"), false)
	if err := unix.Renameat2(unix.AT_FDCWD, m.path("x"), unix.AT_FDCWD, m.path("y"), unix.RENAME_NOREPLACE); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("RENAME_NOREPLACE over an existing name: %v, want EEXIST", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, m.path("x"), unix.AT_FDCWD, m.path("y"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("RENAME_EXCHANGE: %v", err)
	}
	m.live("x", []byte("y"))
	m.live("y", []byte("x"))
}

// TestRandomDataModel checks the data path against a model: random writes,
// truncations and fsyncs of one file, its content compared with the model
// as it goes, and after each crash with what was last synced.
func TestRandomDataModel(t *testing.T) {
	m := mount(t, Lenient)
	rng := rand.New(rand.NewPCG(1, 2))
	m.write("r", nil, true)
	live, durable := []byte{}, []byte{}
	for round := range 5 {
		f, err := os.OpenFile(m.path("r"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		for op := range 200 {
			switch k := rng.IntN(10); {
			case k < 6: // write somewhere, possibly past the end
				off := rng.IntN(3*pageSize*4 + 1)
				data := make([]byte, 1+rng.IntN(2*pageSize))
				for i := range data {
					data[i] = byte('a' + rng.IntN(26))
				}
				if _, err := f.WriteAt(data, int64(off)); err != nil {
					t.Fatal(err)
				}
				if end := off + len(data); end > len(live) {
					live = append(live, make([]byte, end-len(live))...)
				}
				copy(live[off:], data)
			case k < 8: // truncate, shorter or longer
				size := rng.IntN(3*pageSize*4 + 1)
				if err := f.Truncate(int64(size)); err != nil {
					t.Fatal(err)
				}
				if size < len(live) {
					live = live[:size]
				} else {
					live = append(live, make([]byte, size-len(live))...)
				}
			default:
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				durable = append([]byte{}, live...)
			}
			if op%20 == 0 {
				got, err := os.ReadFile(m.path("r"))
				if err != nil || !bytes.Equal(got, live) {
					t.Fatalf("round %d op %d: read %d bytes (%v), want %d (the model)", round, op, len(got), err, len(live))
				}
			}
		}
		f.Close()
		m.crash()
		m.want("r", durable)
		live = bytes.Clone(durable)
	}
}

// TestForget checks that a file with no name left and no open handle is
// dropped, object and all, and that one still open is kept until closed.
func TestForget(t *testing.T) {
	m := mount(t, Lenient)
	objects := func() int {
		ents, err := os.ReadDir(m.fs.stateDir)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	m.write("gone", []byte("x"), false)
	f, err := os.Create(m.path("open"))
	if err != nil {
		t.Fatal(err)
	}
	if n := objects(); n != 2 {
		t.Fatalf("%d objects, want 2", n)
	}
	if err := os.Remove(m.path("gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(m.path("open")); err != nil {
		t.Fatal(err)
	}
	if n := objects(); n != 1 {
		t.Errorf("%d objects after removing both, one still open: want 1", n)
	}
	if _, err := f.Write([]byte("still writable")); err != nil {
		t.Errorf("write to an open, unlinked file: %v", err)
	}
	// Release reaches the filesystem asynchronously after close: its
	// signal says when it forgot a file (a late Release of "gone", which
	// its removal forgot already, forgets nothing).
	m.fs.TestSignals.Released.Init(t)
	f.Close()
	m.fs.TestSignals.Released.WaitFor(t, func(forgot bool) bool { return forgot })
	if n := objects(); n != 0 {
		t.Errorf("%d objects after the last close, want 0", n)
	}
}
