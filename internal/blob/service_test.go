package blob

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/graphstore"
)

// Open tidies what a crash left: temporary uploads and files no record
// names; a stored blob survives a restart whole.
func TestOpenRemovesWhatACrashLeftAndKeepsStoredBlobs(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{Dir: dataDir, Clock: clk})
	require.NoError(t, err)
	dir := filepath.Join(dataDir, "blobs")
	s, err := Open(Config{Dir: dir, Store: store})
	require.NoError(t, err)
	ctx := context.Background()
	b, created, err := s.Put(ctx, PutParams{Tenant: "acme", By: "alice", ContentType: "text/plain", Body: strings.NewReader("kept")})
	require.NoError(t, err)
	require.True(t, created)

	// A crash mid-upload, and one between an upload's rename and its record.
	require.NoError(t, os.WriteFile(filepath.Join(dir, tmpDir, "upload-123"), []byte("partial"), 0o600))
	orphan := filepath.Join(dir, "acme", "ff", strings.Repeat("f", 64))
	require.NoError(t, os.MkdirAll(filepath.Dir(orphan), 0o700))
	require.NoError(t, os.WriteFile(orphan, []byte("no record"), 0o600))
	s.Stop()
	require.NoError(t, store.Close())

	store, err = graphstore.Open(graphstore.Options{Dir: dataDir, Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	s, err = Open(Config{Dir: dir, Store: store})
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	require.NoFileExists(t, orphan)
	tmp, err := os.ReadDir(filepath.Join(dir, tmpDir))
	require.NoError(t, err)
	require.Empty(t, tmp)

	got, f, err := s.Get("acme", b.SHA256)
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, b, got)
	data, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	require.Equal(t, "kept", string(data))
}

func TestContentTypeAndSHA256Checks(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                            DefaultContentType,
		"Text/Plain; Charset=UTF-8":   "text/plain; charset=UTF-8",
		"application/json":            "application/json",
		" image/png ":                 "image/png",
		"multipart/mixed; boundary=x": "multipart/mixed; boundary=x",
	} {
		got, err := ContentType(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"text", "a b/c", "text/plain; =x", strings.Repeat("a", 250) + "/plain"} {
		_, err := ContentType(bad)
		require.Error(t, err, bad)
	}
	require.True(t, ValidSHA256(strings.Repeat("a1", 32)))
	require.False(t, ValidSHA256(strings.Repeat("A1", 32)))
	require.False(t, ValidSHA256(strings.Repeat("a", 63)))
	require.False(t, ValidSHA256(strings.Repeat("g", 64)))
}

// While a backup holds the files, a collection deletes the record but leaves
// the file for the backup to read; the release removes it.
func TestHoldKeepsCollectedFilesUntilReleased(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{Dir: dataDir, Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	s, err := Open(Config{Dir: filepath.Join(dataDir, "blobs"), Store: store, Clock: clk, Grace: time.Minute})
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	ctx := context.Background()
	b, _, err := s.Put(ctx, PutParams{Tenant: "acme", By: "alice", ContentType: "text/plain", Body: strings.NewReader("orphan")})
	require.NoError(t, err)
	path := s.path("acme", b.SHA256)

	release := s.Hold()
	clk.Advance(2 * time.Minute)
	n, err := s.Collect(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, _, err = s.Get("acme", b.SHA256)
	require.Error(t, err, "the record is gone at once")
	f, err := s.OpenFile("acme", b.SHA256)
	require.NoError(t, err, "the file waits for the hold")
	f.Close()
	release()
	require.NoFileExists(t, path)
	release() // a second call does nothing
}
