package server_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/backup"
	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/testserver"
)

// The fixture is a store written by the release before store format 5,
// through its API, and taken with its tether backup (testdata/format4.py
// made it): tenant acme with a policy, an API key, two workers, three
// messages (pending, to a node with a ttl, read), two schedules (one
// triggered once, one paused) and their nodes. format4.json holds what
// that server answered to GETs of each of them, the key's token, and when.
type format4Fixture struct {
	MadeAtUnixMS int64                      `json:"made_at_unix_ms"`
	APIKeyToken  string                     `json:"api_key_token"`
	Responses    map[string]json.RawMessage `json:"responses"`
}

// serveBlobQuota is tether serve's default blob quota, which the fixture's
// server had and the test servers do not.
const serveBlobQuota = 1 << 30

func readFormat4Fixture(t *testing.T) (format4Fixture, []byte) {
	t.Helper()
	var f format4Fixture
	b, err := os.ReadFile(filepath.Join("testdata", "format4.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &f))
	stream, err := os.ReadFile(filepath.Join("testdata", "format4.backup"))
	require.NoError(t, err)
	return f, stream
}

// loadShifted writes the backup's records into dir as a restore does, but
// with every expiry moved on by shift: the fixture's worker records expire
// 24 hours of wall time after it was made, and a test runs later than that.
func loadShifted(t *testing.T, stream []byte, dir string, shift time.Duration) {
	t.Helper()
	_, err := backup.Verify(bytes.NewReader(stream))
	require.NoError(t, err)
	r := bufio.NewReader(bytes.NewReader(stream))
	_, err = r.Discard(len("TETHERBK") + 1)
	require.NoError(t, err)
	field := func() []byte {
		n, err := binary.ReadUvarint(r)
		require.NoError(t, err)
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		require.NoError(t, err)
		return b
	}
	require.NoError(t, kv.Load(dir, func(put func(key, val []byte, expiresAt uint64) error) error {
		for {
			kind, err := r.ReadByte()
			require.NoError(t, err)
			if kind != 1 { // blobs (none here) come after the records, then the trailer
				return nil
			}
			key, val := field(), field()
			exp, err := binary.ReadUvarint(r)
			require.NoError(t, err)
			if exp != 0 {
				exp += uint64(shift / time.Second)
			}
			if err := put(key, val, exp); err != nil {
				return err
			}
		}
	}))
}

func get(t *testing.T, srv *testserver.Server, path, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestAFormat4DataDirIsMigrated: a data directory of store format 4 (its
// tenant, API key, worker, message, schedule and run records JSON) opens;
// every record reads back through the API exactly as the release that wrote
// it answered, the API key still authenticates, tether check finds nothing
// wrong before or after, and the directory is format 5 afterwards.
func TestAFormat4DataDirIsMigrated(t *testing.T) {
	t.Parallel()
	fix, stream := readFormat4Fixture(t)
	madeAt := time.UnixMilli(fix.MadeAtUnixMS).UTC()
	dir := filepath.Join(t.TempDir(), "data")
	loadShifted(t, stream, dir, time.Since(madeAt)+time.Hour)
	rep, err := graphstore.Check(dir)
	require.NoError(t, err)
	require.Equal(t, 4, rep.Format)
	require.Empty(t, rep.Problems)

	for restart := range 2 { // the second open finds format 5: nothing to do
		cfg := testserver.Config(t)
		cfg.DataDir = dir
		cfg.Clock = clocktest.New(madeAt)
		cfg.Tenant.Defaults.BlobQuotaBytes = serveBlobQuota
		srv := testserver.Serve(t, cfg)
		admin, alice := srv.Token("acme", "root", "admin"), srv.Token("acme", "alice")
		for path, want := range fix.Responses {
			tok := admin
			if path == "/v1/inbox" {
				tok = alice
			}
			code, got := get(t, srv, path, tok)
			require.Equal(t, http.StatusOK, code, "restart %d: GET %s: %s", restart, path, got)
			require.JSONEq(t, string(want), string(got), "restart %d: GET %s", restart, path)
		}
		code, got := get(t, srv, "/v1/tenant", fix.APIKeyToken)
		require.Equal(t, http.StatusOK, code, "the API key authenticates: %s", got)
		srv.Stop()

		rep, err = graphstore.Check(dir)
		require.NoError(t, err)
		require.Equal(t, records.FormatVersion, rep.Format)
		require.Empty(t, rep.Problems)
		// A tenant, a key, two workers, three messages, two schedules, a run.
		require.Equal(t, 10, rep.ForeignRecords)
	}
}

// TestABackupOfFormat4Restores: a backup taken before store format 5
// restores as it is (it carries its format record), tether check reads the
// restored format-4 directory, and a server opening it migrates it.
func TestABackupOfFormat4Restores(t *testing.T) {
	t.Parallel()
	fix, stream := readFormat4Fixture(t)
	dir := filepath.Join(t.TempDir(), "restored")
	st, err := backup.Restore(bytes.NewReader(stream), dir)
	require.NoError(t, err)
	require.Equal(t, int64(21), st.Records)
	rep, err := graphstore.Check(dir)
	require.NoError(t, err)
	require.Equal(t, 4, rep.Format)
	require.Empty(t, rep.Problems)

	cfg := testserver.Config(t)
	cfg.DataDir = dir
	cfg.Clock = clocktest.New(time.UnixMilli(fix.MadeAtUnixMS).UTC())
	cfg.Tenant.Defaults.BlobQuotaBytes = serveBlobQuota
	srv := testserver.Serve(t, cfg)
	// The records without an expiry read back as they were (the workers'
	// may have expired on the wall clock since the backup was made).
	admin := srv.Token("acme", "root", "admin")
	for _, path := range []string{"/v1/tenant", "/v1/tokens", "/v1/schedules", "/v1/schedules/nightly/runs"} {
		code, got := get(t, srv, path, admin)
		require.Equal(t, http.StatusOK, code, "GET %s: %s", path, got)
		require.JSONEq(t, string(fix.Responses[path]), string(got), "GET %s", path)
	}
	srv.Stop()
	rep, err = graphstore.Check(dir)
	require.NoError(t, err)
	require.Equal(t, records.FormatVersion, rep.Format)
	require.Empty(t, rep.Problems)
}
