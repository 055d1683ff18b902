package graphstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

const (
	shaA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	shaB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func putBlob(t *testing.T, s *Store, tenant, sha string, size int64) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		return tx.BlobInsert(tenant, sha, &records.BlobRecord{Size: size, ContentType: "text/plain", CreatedBy: "head"})
	}))
}

func usage(s *Store, tenant string) (n int64) {
	_ = s.View(func(tx *Tx) error { n = tx.BlobUsage(tenant); return nil })
	return n
}

func TestBlobReferencesKeepABlobAndTheLastOneStartsItsGracePeriod(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	t0 := clk.Now()

	putBlob(t, s, "acme", shaA, 10)
	putBlob(t, s, "acme", shaB, 5)
	putBlob(t, s, "other", shaA, 7)
	require.Equal(t, int64(15), usage(s, "acme"))
	require.Equal(t, int64(7), usage(s, "other"))
	require.Len(t, s.BlobOrphans(t0, 10), 3, "a new blob is unreferenced from its creation")

	// A node may name only its own tenant's blobs; a refused insert changes nothing.
	n := newNode("acme", "a", 0)
	n.Blobs = []string{shaA, "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"}
	err = s.Update(ctx, func(tx *Tx) error { return tx.NodeInsert(n, "head") })
	var inv *fault.Invalid
	require.ErrorAs(t, err, &inv)
	require.Len(t, s.BlobOrphans(t0, 10), 3)

	n.Blobs = []string{shaA}
	insert(t, s, n)
	m := newNode("acme", "m", 0)
	m.Blobs = []string{shaA, shaB}
	insert(t, s, m)
	require.Equal(t, []BlobID{{"other", shaA}}, s.BlobOrphans(t0, 10))

	// Dropping one of two references keeps the blob; dropping a blob's only
	// reference (by PATCH) starts its grace period.
	clk.Advance(time.Minute)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		nm, err := tx.NodeGet("acme", "m")
		if err != nil {
			return err
		}
		nm.Blobs = nil
		return tx.NodePut(nm)
	}))
	require.Equal(t, []BlobID{{"other", shaA}, {"acme", shaB}}, s.BlobOrphans(clk.Now(), 10))
	require.Equal(t, []BlobID{{"other", shaA}}, s.BlobOrphans(clk.Now().Add(-time.Second), 10))

	// A referenced blob is never deleted; an unreferenced one only once due.
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		ok, err := tx.BlobDelete("acme", shaA, clk.Now())
		require.False(t, ok)
		if err != nil {
			return err
		}
		ok, err = tx.BlobDelete("acme", shaB, clk.Now().Add(-time.Second))
		require.False(t, ok)
		return err
	}))

	// Restart: the counts come back from the node records, the grace start
	// from the blob record.
	require.NoError(t, s.Close())
	s, err = Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.Equal(t, []BlobID{{"other", shaA}, {"acme", shaB}}, s.BlobOrphans(clk.Now(), 10))
	require.Equal(t, int64(15), usage(s, "acme"))

	// Deleting the node drops its reference.
	clk.Advance(time.Minute)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		old, err := tx.NodeGet("acme", "a")
		if err != nil {
			return err
		}
		return tx.NodeDelete(old, "head")
	}))
	require.Equal(t, []BlobID{{"other", shaA}, {"acme", shaB}, {"acme", shaA}}, s.BlobOrphans(clk.Now(), 10))

	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		ok, err := tx.BlobDelete("acme", shaA, clk.Now())
		require.True(t, ok)
		return err
	}))
	require.Equal(t, int64(5), usage(s, "acme"))
	require.NoError(t, s.View(func(tx *Tx) error {
		_, err := tx.BlobGet("acme", shaA)
		var nf *fault.NotFound
		require.ErrorAs(t, err, &nf)
		r, err := tx.BlobGet("other", shaA)
		require.NoError(t, err)
		require.Equal(t, int64(7), r.Size)
		return nil
	}))
}

func TestOpenRefusesAnotherFormatNamingBoth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	for stored, says := range map[int]string{
		records.OpensFrom - 1:     "open it once with the previous release",
		records.FormatVersion + 1: "written by a newer release",
	} {
		setMarker(t, dir, records.FormatKey, []byte(fmt.Sprint(stored)))
		_, err = Open(Options{Dir: dir})
		require.ErrorContains(t, err, fmt.Sprintf("holds store format %d", stored))
		require.ErrorContains(t, err, fmt.Sprintf("this release opens formats %d to %d", records.OpensFrom, records.FormatVersion))
		require.ErrorContains(t, err, says)
		_, err = Check(dir)
		require.ErrorContains(t, err, fmt.Sprintf("holds store format %d", stored))
	}
}

func TestCheckFindsANodeNamingAMissingBlob(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	putBlob(t, s, "acme", shaA, 3)
	n := newNode("acme", "a", 0)
	n.Blobs = []string{shaA}
	insert(t, s, n)
	require.NoError(t, s.Close())
	rep, err := Check(dir)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)

	s, err = Open(Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.kv.Update(context.Background(), func(tx *kv.Txn) error { return tx.Delete(records.BlobKey("acme", shaA)) }))
	require.NoError(t, s.Close())
	rep, err = Check(dir)
	require.NoError(t, err)
	require.Len(t, rep.Problems, 1)
	require.Contains(t, rep.Problems[0], "names blob "+shaA+", which has no record")
}
