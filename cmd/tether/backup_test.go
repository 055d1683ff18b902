package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/backup"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

const testOperatorToken = "op-test-token"

// backupLedger is what the server acknowledged, with when.
type backupLedger struct {
	mu      sync.Mutex
	created map[string]time.Time // id -> when its create was answered 201
	ended   map[string]endRec    // id -> its acknowledged end
}

type endRec struct {
	status records.Status
	at     time.Time
}

// Backups taken while writers run are each a consistent cut: restored into a
// new directory, tether check is clean, everything acknowledged before the
// backup began is in it, and every node's record agrees with its events.
func TestBackupsUnderLoadRestoreConsistently(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "backup", t.TempDir(), "TETHER_OPERATOR_TOKENS="+testOperatorToken)
	hc := httpClient(t)
	head, w := srv.as(hc, mint(t, "head", "dispatcher")), srv.as(hc, mint(t, "w", "worker"))
	ctx := context.Background()
	led := &backupLedger{created: map[string]time.Time{}, ended: map[string]endRec{}}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				id := fmt.Sprintf("b%d-%d", i, n)
				cr, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q")})
				if err != nil || cr.StatusCode() != http.StatusCreated {
					t.Errorf("create %s: %v %s", id, err, body(cr))
					return
				}
				led.mu.Lock()
				led.created[id] = time.Now()
				led.mu.Unlock()
				cl, err := w.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{})
				if err != nil || cl.StatusCode() != http.StatusOK {
					t.Errorf("claim %s: %v %s", id, err, body(cl))
					return
				}
				fence := ptr(cl.JSON200.Lease.Fence)
				var end records.Status
				if n%4 == 3 {
					res, err := w.FailNodeWithResponse(ctx, id, client.FailRequest{Error: "no", Fence: fence, Requeue: ptr(false)})
					if err != nil || res.StatusCode() != http.StatusOK {
						t.Errorf("fail %s: %v %s", id, err, body(res))
						return
					}
					end = records.StatusFailed
				} else {
					res, err := w.CompleteNodeWithResponse(ctx, id, client.CompleteRequest{Fence: fence})
					if err != nil || res.StatusCode() != http.StatusOK {
						t.Errorf("complete %s: %v %s", id, err, body(res))
						return
					}
					end = records.StatusDone
				}
				led.mu.Lock()
				led.ended[id] = endRec{end, time.Now()}
				led.mu.Unlock()
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()

	rounds := 20
	dir := t.TempDir()
	for r := range rounds {
		time.Sleep(50 * time.Millisecond) // let the writers move on between backups
		file := filepath.Join(dir, fmt.Sprintf("r%02d.backup", r))
		began := time.Now()
		out, err := exec.Command(tetherBin, "backup", "--server", srv.url, "--token", testOperatorToken, "-f", file).CombinedOutput()
		require.NoError(t, err, "backup %d: %s", r, out)
		restored := filepath.Join(dir, fmt.Sprintf("r%02d", r))
		out, err = exec.Command(tetherBin, "restore", file, restored).CombinedOutput()
		require.NoError(t, err, "restore %d (includes tether check): %s", r, out)
		led.mu.Lock()
		created, ended := maps(led.created), endMap(led.ended)
		led.mu.Unlock()
		checkRestored(t, r, restored, began, created, ended)
	}
	stop.Store(true)
	wg.Wait()
	led.mu.Lock()
	t.Logf("%d backups, each restored and checked, while %d nodes were created and %d ended", rounds, len(led.created), len(led.ended))
	led.mu.Unlock()
}

func maps(m map[string]time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func endMap(m map[string]endRec) map[string]endRec {
	out := make(map[string]endRec, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkRestored opens a restored directory and holds it to what was
// acknowledged before the backup began, and to its own events.
func checkRestored(t *testing.T, round int, dir string, began time.Time, created map[string]time.Time, ended map[string]endRec) {
	t.Helper()
	store, err := graphstore.Open(graphstore.Options{Dir: dir})
	require.NoError(t, err, "round %d", round)
	defer store.Close()
	require.NoError(t, store.View(func(tx *graphstore.Tx) error {
		for id, at := range created {
			if !at.Before(began) {
				continue
			}
			n, err := tx.NodeGet("acme", id)
			require.NoError(t, err, "round %d: %s was created (acknowledged) before the backup began", round, id)
			if e, ok := ended[id]; ok && e.at.Before(began) {
				require.Equal(t, e.status, n.Status, "round %d: %s ended (acknowledged) before the backup began", round, id)
			}
		}
		nodes, _, err := tx.NodeList("acme", graphstore.NodeQuery{Limit: 1 << 20})
		require.NoError(t, err)
		for _, n := range nodes {
			evs, err := tx.NodeEvents("acme", n.ID, 0, 100)
			require.NoError(t, err)
			types := map[records.EventType]int{}
			for _, ev := range evs {
				types[ev.Type]++
			}
			require.Equal(t, 1, types[records.EventCreated], "round %d: %s: events %v", round, n.ID, types)
			switch n.Status {
			case records.StatusDone:
				require.Equal(t, 1, types[records.EventCompleted], "round %d: %s is done: events %v", round, n.ID, types)
			case records.StatusFailed:
				require.Equal(t, 1, types[records.EventFailed], "round %d: %s failed: events %v", round, n.ID, types)
			case records.StatusRunning:
				require.NotNil(t, n.Lease, "round %d: %s", round, n.ID)
				require.Equal(t, 1, types[records.EventClaimed], "round %d: %s is running: events %v", round, n.ID, types)
				require.Zero(t, types[records.EventCompleted]+types[records.EventFailed], "round %d: %s is running: events %v", round, n.ID, types)
			case records.StatusQueued:
				require.Zero(t, types[records.EventClaimed], "round %d: %s is queued: events %v", round, n.ID, types)
			}
		}
		return nil
	}))
}

// A backup cut short or changed in one byte is refused, and leaves nothing
// at the target; a non-empty target is refused.
func TestRestoreRefusesDamagedBackups(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "backup-damage", t.TempDir(), "TETHER_OPERATOR_TOKENS="+testOperatorToken)
	hc := httpClient(t)
	head := srv.as(hc, mint(t, "head", "dispatcher"))
	for i := range 50 {
		res, err := head.CreateNodeWithResponse(context.Background(), nil, client.NodeCreate{ID: ptr(fmt.Sprintf("n%d", i)), Type: "task", Queue: ptr("q")})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.StatusCode())
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "whole.backup")
	out, err := exec.Command(tetherBin, "backup", "--server", srv.url, "--token", testOperatorToken, "-f", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
	whole, err := os.ReadFile(file)
	require.NoError(t, err)
	st, err := backup.Verify(bytes.NewReader(whole))
	require.NoError(t, err)
	require.Greater(t, st.Records, int64(50))

	damaged := map[string][]byte{
		"cut short":       whole[:len(whole)/2],
		"without trailer": whole[:len(whole)-33],
		"one byte off":    flip(whole, len(whole)/3),
		"trailing bytes":  append(append([]byte{}, whole...), 0),
		"not a backup":    []byte("hello"),
	}
	for name, b := range damaged {
		f := filepath.Join(dir, name+".backup")
		require.NoError(t, os.WriteFile(f, b, 0o600))
		target := filepath.Join(dir, "restored-"+name)
		out, err := exec.Command(tetherBin, "restore", f, target).CombinedOutput()
		require.Error(t, err, "%s: restored: %s", name, out)
		_, statErr := os.Stat(target)
		require.True(t, os.IsNotExist(statErr), "%s: something was left at the target", name)
		leftovers, _ := filepath.Glob(filepath.Join(dir, ".restored-"+name+".restoring-*"))
		require.Empty(t, leftovers, "%s: the temporary directory was left", name)
	}
	busy := filepath.Join(dir, "busy")
	require.NoError(t, os.MkdirAll(busy, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(busy, "x"), nil, 0o600))
	out, err = exec.Command(tetherBin, "restore", file, busy).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "not empty")

	// Without an operator token (a tenant admin's is not one) there is no backup.
	admin := mint(t, "root", "admin")
	for _, tok := range []string{"", admin, "wrong"} {
		req, _ := http.NewRequest(http.MethodGet, srv.url+"/admin/backup", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := hc.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, "token %q", tok)
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte{}, b...)
	out[i] ^= 0x40
	return out
}

// A backup carries the file of every blob its records name: a server on the
// restored directory serves the blob, byte for byte, to the node naming it.
func TestBackupCarriesBlobs(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "backup-blobs", t.TempDir(), "TETHER_OPERATOR_TOKENS="+testOperatorToken)
	hc := httpClient(t)
	w := srv.as(hc, mint(t, "w", "worker"))
	ctx := context.Background()
	content := bytes.Repeat([]byte("tether blob "), 100_000) // 1.2 MB
	up, err := w.UploadBlobWithBodyWithResponse(ctx, "application/octet-stream", bytes.NewReader(content))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, up.StatusCode(), string(up.Body))
	sha := up.JSON201.Sha256
	head := srv.as(hc, mint(t, "head", "dispatcher"))
	res, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("with-blob"), Type: "task", Queue: ptr("q"), Blobs: &[]string{sha}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))

	dir := t.TempDir()
	file := filepath.Join(dir, "b.backup")
	out, err := exec.Command(tetherBin, "backup", "--server", srv.url, "--token", testOperatorToken, "-f", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "1 of them blob files")
	restored := filepath.Join(dir, "restored")
	out, err = exec.Command(tetherBin, "restore", file, restored).CombinedOutput()
	require.NoError(t, err, "%s", out)

	again := startServer(t, "restored-blobs", restored)
	w2 := again.as(hc, mint(t, "w", "worker"))
	got, err := w2.GetBlobWithResponse(ctx, sha, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode())
	require.Equal(t, content, got.Body)
	n, err := w2.GetNodeWithResponse(ctx, "with-blob")
	require.NoError(t, err)
	require.Equal(t, []string{sha}, n.JSON200.Blobs)
}
