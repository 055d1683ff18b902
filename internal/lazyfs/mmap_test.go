package lazyfs

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMmap checks what Badger relies on: the kernel writes dirty pages of a
// MAP_SHARED mapping back to us as WRITE requests, msync reaches us as FSYNC,
// and what was not msynced is lost at a crash even though the process
// unmapped and closed the file.
func TestMmap(t *testing.T) {
	rules(t, func(t *testing.T, rule DirRule) {
		m := mount(t, rule)
		m.write("m", make([]byte, 16*pageSize), true)
		m.syncDir(".")
		before := m.fs.Stats()

		out, err := helper(t, "mmap", m.mnt).CombinedOutput()
		if err != nil {
			t.Fatalf("mmap helper: %v\n%s", err, out)
		}
		after := m.fs.Stats()
		if after.Writes == before.Writes {
			t.Errorf("no WRITE reached lazyfs from the mapping (stats %+v)", after)
		}
		if after.Fsyncs == before.Fsyncs {
			t.Errorf("msync sent no FSYNC (stats %+v)", after)
		}
		// Page 7 was written after the msync: the kernel wrote it back to us
		// when the file was closed, and it is dirty in memory.
		var f *fileNode
		m.fs.files.Range(func(_, v any) bool {
			if fn := v.(*fileNode); len(fn.live) > 0 {
				f = fn
			}
			return f == nil
		})
		f.mu.Lock()
		_, dirty7 := f.pages[7]
		nDirty := len(f.pages)
		f.mu.Unlock()
		if !dirty7 || nDirty != 1 {
			t.Errorf("dirty pages after the helper: page 7 dirty=%v, %d dirty in all; want only page 7", dirty7, nDirty)
		}
		want := make([]byte, 16*pageSize)
		copy(want[0:], bytes.Repeat([]byte{'A'}, pageSize))
		copy(want[5*pageSize:], bytes.Repeat([]byte{'A'}, pageSize))
		live := bytes.Clone(want)
		copy(live[7*pageSize:], bytes.Repeat([]byte{'B'}, pageSize))
		m.live("m", live)

		m.crash()
		if st := m.fs.Stats(); st.DroppedPages != 0 {
			t.Errorf("a fresh mount reports dropped pages: %+v", st)
		}
		m.want("m", want)
	})
}

// TestBadgerSurvivesCrashes runs Badger (SyncWrites) in a child process on
// the mount, kills it and crashes the filesystem while it writes, a few
// times, and checks after each crash that Badger opens and that every write
// it acknowledged is there.
func TestBadgerSurvivesCrashes(t *testing.T) {
	testBadger(t, Lenient, 3, func(cycle int, out string, err error) {
		if err != nil || !strings.Contains(out, "missing 0 of") {
			t.Errorf("cycle %d: after the crash: %v\n%s", cycle, err, out)
		}
	})
}

// TestBadgerStrictDirectories is the same under the Strict rule. Badger
// does not fsync the directory after it creates a memtable WAL (z.OpenMmapFile
// syncs it only for a zero-length file) or an L0 table from a memtable flush
// (only compactions sync it), so under this rule it can lose acknowledged
// writes or fail to open; the test reports what happened and fails only when
// LAZYFS_STRICT_BADGER=must-pass.
func TestBadgerStrictDirectories(t *testing.T) {
	if testing.Short() {
		t.Skip("a report, not a check; slow")
	}
	var failures []string
	testBadger(t, Strict, 4, func(cycle int, out string, err error) {
		if err != nil || !strings.Contains(out, "missing 0 of") {
			failures = append(failures, strings.TrimSpace(out))
		}
	})
	if len(failures) > 0 {
		msg := "Badger under the Strict rule: " + strings.Join(failures, " | ")
		if os.Getenv("LAZYFS_STRICT_BADGER") == "must-pass" {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
	}
}

func testBadger(t *testing.T, rule DirRule, cycles int, check func(cycle int, out string, err error)) {
	m := mount(t, rule)
	keysFile := filepath.Join(t.TempDir(), "acked")
	var acked []string
	for cycle := 1; cycle <= cycles; cycle++ {
		w := helper(t, "badger-write", m.mnt, helperArgEnv+"=c"+string(rune('0'+cycle)))
		var stderr bytes.Buffer
		w.Stderr = &stderr
		pipe, err := w.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(pipe)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		deadline := time.After(1500 * time.Millisecond)
		n := 0
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break read
				}
				if k, ok := strings.CutPrefix(l, "ack "); ok {
					acked = append(acked, k)
					n++
				}
			case <-deadline:
				break read
			}
		}
		_ = w.Process.Signal(syscall.SIGKILL)
		for l := range lines { // acks written before the kill are acks too
			if k, ok := strings.CutPrefix(l, "ack "); ok {
				acked = append(acked, k)
				n++
			}
		}
		_ = w.Wait()
		if n == 0 {
			t.Fatalf("cycle %d: Badger acknowledged no write: %s", cycle, stderr.String())
		}
		old := m.fs
		m.crash()
		st := old.Stats()
		if err := os.WriteFile(keysFile, []byte(strings.Join(acked, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := helper(t, "badger-check", m.mnt, helperArgEnv+"="+keysFile).CombinedOutput()
		t.Logf("%s cycle %d: %d writes acknowledged (%d in all); lazyfs: %d writes, %d fsyncs, %d dir fsyncs, dropped %d dirty pages, %d resizes, %d entries; check: %s",
			rule, cycle, n, len(acked), st.Writes, st.Fsyncs, st.DirFsyncs, st.DroppedPages, st.DroppedResizes, st.DroppedEntries, strings.TrimSpace(string(out)))
		check(cycle, string(out), err)
		if err != nil {
			return // the store is broken; later cycles would only repeat it
		}
	}
}
