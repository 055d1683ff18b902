package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
)

// procKB reads a "Name:   123 kB" line of /proc/<pid>/status, in bytes.
func procKB(t *testing.T, pid int, name string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("error reading %s: %v", name, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}

// rssWatch samples a process's resident set every few milliseconds until
// stopped, and also resets the kernel's high-water mark (VmHWM) so that a
// peak between samples is seen too.
type rssWatch struct {
	t    *testing.T
	pid  int
	stop chan struct{}
	done sync.WaitGroup
	peak int64
}

func watchRSS(t *testing.T, pid int) *rssWatch {
	t.Helper()
	// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	w := &rssWatch{t: t, pid: pid, stop: make(chan struct{})}
	w.done.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				w.peak = max(w.peak, procKB(t, pid, "VmRSS"))
			}
		}
	})
	return w
}

// end stops the sampling and returns the highest RSS seen.
func (w *rssWatch) end() int64 {
	close(w.stop)
	w.done.Wait()
	return max(w.peak, procKB(w.t, w.pid, "VmHWM"), procKB(w.t, w.pid, "VmRSS"))
}

const mib = 1 << 20

// randomBytes is n deterministic pseudo-random bytes, made as they are read.
func randomBytes(seed uint64, n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{byte(seed)}), n)
}

// A 100 MiB blob goes into a real tether serve,
// raw and as multipart, and back out, with its RSS rising by less than 20 MiB.
func TestBlob100MiBUploadKeepsServerRSSFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 300 MiB")
	}
	srv := startServer(t, "server", t.TempDir(), fmt.Sprintf("TETHER_BLOB_MAX_BYTES=%d", 128*mib))
	pid := srv.cmd.Process.Pid
	hc := &http.Client{}
	c := srv.as(hc, mint(t, "alice", "worker"))
	ctx := context.Background()
	const size = 100 * mib

	// One small upload and read first, so what is made once is made.
	warm, err := c.UploadBlobWithBodyWithResponse(ctx, "text/plain", strings.NewReader("warm"))
	if err != nil || warm.StatusCode() != http.StatusCreated {
		t.Fatalf("warm-up upload: %v %s", err, warm.Body)
	}
	base := procKB(t, pid, "VmRSS")

	uploads := []struct {
		name string
		send func(body io.Reader) (*client.UploadBlobResponse, error)
	}{
		{"raw", func(body io.Reader) (*client.UploadBlobResponse, error) {
			return c.UploadBlobWithBodyWithResponse(ctx, "application/octet-stream", body, func(_ context.Context, req *http.Request) error {
				req.ContentLength = size
				return nil
			})
		}},
		{"multipart", func(body io.Reader) (*client.UploadBlobResponse, error) {
			pr, pw := io.Pipe()
			mw := multipart.NewWriter(pw)
			go func() {
				part, err := mw.CreateFormFile("file", "big.bin")
				if err == nil {
					_, err = io.Copy(part, body)
				}
				if err == nil {
					err = mw.Close()
				}
				pw.CloseWithError(err)
			}()
			return c.UploadBlobWithBodyWithResponse(ctx, mw.FormDataContentType(), pr)
		}},
	}
	for i, u := range uploads {
		h := sha256.New()
		w := watchRSS(t, pid)
		res, err := u.send(io.TeeReader(randomBytes(uint64(i), size), h))
		peak := w.end()
		if err != nil {
			t.Fatalf("%s upload: %v", u.name, err)
		}
		if res.StatusCode() != http.StatusCreated {
			t.Fatalf("%s upload: %d %s", u.name, res.StatusCode(), res.Body)
		}
		want := hex.EncodeToString(h.Sum(nil))
		if res.JSON201.Sha256 != want || res.JSON201.Size != size {
			t.Fatalf("%s upload stored %+v, want sha256 %s and %d bytes", u.name, *res.JSON201, want, size)
		}
		t.Logf("%s upload of 100 MiB: RSS %d MiB before, peak %d MiB (+%.1f MiB)",
			u.name, base/mib, peak/mib, float64(peak-base)/mib)
		if rise := peak - base; rise >= 20*mib {
			t.Errorf("%s upload: the server's RSS rose by %.1f MiB (from %d to %d bytes), want less than 20 MiB",
				u.name, float64(rise)/mib, base, peak)
		}

		// Read back whole, streamed, with its hash checked.
		w = watchRSS(t, pid)
		resp, err := c.GetBlob(ctx, want, nil)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		rh := sha256.New()
		n, err := io.Copy(rh, resp.Body)
		resp.Body.Close()
		peak = w.end()
		if err != nil || n != size || hex.EncodeToString(rh.Sum(nil)) != want {
			t.Fatalf("read %d bytes (%v), hashing to %x; want %d bytes hashing to %s", n, err, rh.Sum(nil), size, want)
		}
		if rise := peak - base; rise >= 20*mib {
			t.Errorf("read: the server's RSS rose by %.1f MiB, want less than 20 MiB", float64(rise)/mib)
		}
	}
}

func TestCLIBlobPutAndGet(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	dir := t.TempDir()
	data := []byte("the report, in full\n")
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	src := filepath.Join(dir, "report.txt")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}

	out := e.ok(e.alice, "blob", "put", src)
	requireContains(t, out, "SHA256 SIZE CONTENT_TYPE NEW", sha+" 20 text/plain; charset=utf-8 yes")
	again := decode[client.Blob](t, e.ok(e.alice, "blob", "put", src, "-o", "json"))
	if again.Sha256 != sha || again.Size != int64(len(data)) {
		t.Fatalf("second put: %+v", again)
	}
	requireContains(t, e.ok(e.alice, "blob", "put", src), sha+" 20 text/plain; charset=utf-8 no")

	// To a file with --out, and to stdout.
	dst := filepath.Join(dir, "copy.txt")
	if got := e.ok(e.alice, "blob", "get", sha, "--out", dst); got != "" {
		t.Fatalf("blob get --out printed %q", got)
	}
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file holds %q (%v), want %q", got, err, data)
	}
	if got := e.ok(e.alice, "blob", "get", strings.ToUpper(sha)); got != string(data) {
		t.Fatalf("blob get printed %q", got)
	}
	// -o is the output format everywhere; a file name there says to use --out.
	r := e.fails(2, e.alice, "blob", "get", sha, "-o", dst+".2")
	requireContains(t, r.stderr, "--out "+dst+".2")
	if _, err := os.Stat(dst + ".2"); !os.IsNotExist(err) {
		t.Fatalf("blob get -o FILE wrote the file: %v", err)
	}

	// Referenced by a node.
	node := decode[client.Node](t, e.ok(e.head, "nodes", "create", "--type", "review", "--id", "r1", "--blob", sha, "-o", "json"))
	if len(node.Blobs) != 1 || node.Blobs[0] != sha {
		t.Fatalf("node blobs: %v", node.Blobs)
	}
	requireContains(t, e.ok(e.head, "nodes", "get", "r1"), "blobs: "+sha)

	// Errors: no such blob, no such file; no partial file is left.
	missing := strings.Repeat("0", 64)
	r = e.fails(1, e.alice, "blob", "get", missing, "--out", filepath.Join(dir, "missing"))
	requireContains(t, r.stderr, "404 not_found")
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("blob get of a missing blob left a file: %v", err)
	}
	e.fails(2, e.alice, "blob", "put", filepath.Join(dir, "nope"))
	r = e.fails(1, e.head, "nodes", "create", "--type", "review", "--blob", missing)
	requireContains(t, r.stderr, "400 bad_request", "field: blobs[0]")
}
