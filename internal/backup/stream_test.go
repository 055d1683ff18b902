package backup_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/backup"
	"github.com/tether-run/tether/internal/kv"
)

func dump(t *testing.T, s *kv.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, s.Snapshot(func(k, v []byte, _ uint64) error {
		out[string(k)] = string(v)
		return nil
	}))
	return out
}

// A backup restores to exactly the records it was taken from: overwritten
// and deleted keys as last written, keys with a TTL with it, expired ones
// gone, whether Badger or only the log held them.
func TestRoundTrip(t *testing.T) {
	src, err := kv.Open(kv.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	src.Start()
	defer src.Close()
	ctx := context.Background()
	for i := range 2000 {
		require.NoError(t, src.Update(ctx, func(tx *kv.Txn) error {
			k := fmt.Appendf(nil, "k%05d", i%1500)
			switch {
			case i%97 == 0:
				return tx.Delete(k)
			case i%13 == 0:
				return tx.SetTTL(k, fmt.Appendf(nil, "ttl%d", i), time.Hour)
			default:
				return tx.Set(k, fmt.Appendf(nil, "v%d", i))
			}
		}))
	}
	require.NoError(t, src.Update(ctx, func(tx *kv.Txn) error {
		return tx.SetTTL([]byte("gone"), []byte("x"), -time.Hour)
	}))
	want := dump(t, src)
	require.NotContains(t, want, "gone")

	var buf bytes.Buffer
	st, err := backup.Write(&buf, src, nil)
	require.NoError(t, err)
	require.EqualValues(t, len(want), st.Records)
	require.EqualValues(t, buf.Len(), st.Bytes)

	dir := filepath.Join(t.TempDir(), "restored")
	rst, err := backup.Restore(bytes.NewReader(buf.Bytes()), dir)
	require.NoError(t, err)
	require.Equal(t, st, rst)
	dst, err := kv.Open(kv.Options{Dir: dir})
	require.NoError(t, err)
	dst.Start()
	defer dst.Close()
	require.Equal(t, want, dump(t, dst))
	var ttls int
	require.NoError(t, dst.Snapshot(func(k, _ []byte, exp uint64) error {
		if exp != 0 {
			ttls++
			require.Greater(t, exp, uint64(time.Now().Unix()))
		}
		return nil
	}))
	require.Positive(t, ttls, "the TTLs came back")

	_, err = backup.Restore(bytes.NewReader(buf.Bytes()), dir)
	require.ErrorContains(t, err, "not empty")
}
