package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/server"
)

func shaOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// upload sends data as a raw body with contentType.
func upload(t *testing.T, c *client.ClientWithResponses, contentType string, data []byte) *client.UploadBlobResponse {
	t.Helper()
	res, err := c.UploadBlobWithBodyWithResponse(context.Background(), contentType, bytes.NewReader(data))
	require.NoError(t, err)
	return res
}

// multipartBody is a multipart/form-data body with one part per field
// (name, part content type, data), and its Content-Type.
func multipartBody(t *testing.T, parts ...[3]string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename="f.bin"`, p[0]))
		if p[1] != "" {
			h.Set("Content-Type", p[1])
		}
		pw, err := w.CreatePart(h)
		require.NoError(t, err)
		_, err = pw.Write([]byte(p[2]))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return w.FormDataContentType(), buf.Bytes()
}

// getBlob reads a blob with extra request headers, through the validating transport.
func (e *env) getBlob(tok, sha string, headers map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	return e.rawWithHeaders(http.MethodGet, "/v1/blobs/"+sha, tok, "", headers)
}

func TestBlobUploadIsDeduplicatedAndRangeRead(t *testing.T) {
	t.Parallel()
	e := start(t)
	w := e.user("alice", "worker")
	tok := e.token("acme", "alice", "worker")
	data := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	sha := shaOf(data)

	first := upload(t, w, "text/plain; charset=utf-8", data)
	require.Equal(t, http.StatusCreated, first.StatusCode(), string(first.Body))
	require.Equal(t, client.Blob{Sha256: sha, Size: int64(len(data)), ContentType: "text/plain; charset=utf-8"}, *first.JSON201)
	require.Equal(t, "/v1/blobs/"+sha, first.HTTPResponse.Header.Get("Location"))

	// The same bytes again, raw or as multipart with another type: 200, the
	// blob as it was, one file on disk.
	again := upload(t, w, "application/octet-stream", data)
	require.Equal(t, http.StatusOK, again.StatusCode(), string(again.Body))
	require.Equal(t, *first.JSON201, *again.JSON200)
	ct, body := multipartBody(t, [3]string{"file", "image/png", string(data)})
	multi := upload(t, w, ct, body)
	require.Equal(t, http.StatusOK, multi.StatusCode(), string(multi.Body))
	require.Equal(t, *first.JSON201, *multi.JSON200)
	files, err := filepath.Glob(filepath.Join(e.blobDir(), "acme", "*", "*"))
	require.NoError(t, err)
	require.Len(t, files, 1)

	// A new blob as multipart takes its part's type.
	ct, body = multipartBody(t, [3]string{"file", "image/png", "\x89PNG..."})
	png := upload(t, w, ct, body)
	require.Equal(t, http.StatusCreated, png.StatusCode(), string(png.Body))
	require.Equal(t, "image/png", png.JSON201.ContentType)

	// Whole, by the generated client, as a reader may; the sha in upper case too.
	r := e.user("rita", "reader")
	got, err := r.GetBlobWithResponse(context.Background(), strings.ToUpper(sha), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode())
	require.Equal(t, data, got.Body)
	require.Equal(t, "text/plain; charset=utf-8", got.HTTPResponse.Header.Get("Content-Type"))
	require.Equal(t, `"`+sha+`"`, got.HTTPResponse.Header.Get("ETag"))
	require.Equal(t, "bytes", got.HTTPResponse.Header.Get("Accept-Ranges"))

	// Ranges.
	resp, part := e.getBlob(tok, sha, map[string]string{"Range": "bytes=10-15"})
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	require.Equal(t, "abcdef", string(part))
	require.Equal(t, fmt.Sprintf("bytes 10-15/%d", len(data)), resp.Header.Get("Content-Range"))
	resp, part = e.getBlob(tok, sha, map[string]string{"Range": "bytes=-3"})
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	require.Equal(t, "xyz", string(part))
	resp, part = e.getBlob(tok, sha, map[string]string{"Range": "bytes=1000-"})
	require.Equal(t, http.StatusRequestedRangeNotSatisfiable, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	require.Equal(t, fmt.Sprintf("bytes */%d", len(data)), resp.Header.Get("Content-Range"))
	var p client.Problem
	require.NoError(t, json.Unmarshal(part, &p))
	require.Equal(t, client.ProblemCode("range_not_satisfiable"), p.Code)

	// Conditional; and the size alone, from a one-byte range.
	resp, _ = e.getBlob(tok, sha, map[string]string{"If-None-Match": `"` + sha + `"`})
	require.Equal(t, http.StatusNotModified, resp.StatusCode)
	resp, _ = e.getBlob(tok, sha, map[string]string{"Range": "bytes=0-0"})
	require.Equal(t, fmt.Sprintf("bytes 0-0/%d", len(data)), resp.Header.Get("Content-Range"))
	resp, _ = e.getBlob(tok, shaOf([]byte("nope")), nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func withBlobs(maxBytes int64, grace time.Duration) option {
	return func(c *server.Config) {
		c.BlobMaxBytes, c.BlobGrace = maxBytes, grace
	}
}

func (e *env) blobDir() string { return filepath.Join(e.dataDir, "blobs") }

func TestBlobOverTheLimitOrTheQuotaIs413AndKeepsNothing(t *testing.T) {
	t.Parallel()
	e := start(t, withBlobs(1000, 0))
	w := e.user("alice", "worker")
	ctx := context.Background()

	over := upload(t, w, "", bytes.Repeat([]byte("x"), 1001))
	require.Equal(t, http.StatusRequestEntityTooLarge, over.StatusCode(), string(over.Body))
	requireProblem(t, over.ApplicationProblemJSON413, 413, client.ProblemCodePayloadTooLarge)
	require.Equal(t, int64(1000), *over.ApplicationProblemJSON413.Limit)
	require.Contains(t, over.ApplicationProblemJSON413.Detail, "1000")

	// No Content-Length: cut off while streaming.
	res, err := w.UploadBlobWithBodyWithResponse(ctx, "", io.MultiReader(strings.NewReader(strings.Repeat("y", 1500))))
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode(), string(res.Body))
	require.Equal(t, int64(1000), *res.ApplicationProblemJSON413.Limit)
	// Exactly the limit is fine.
	ok := upload(t, w, "", bytes.Repeat([]byte("z"), 1000))
	require.Equal(t, http.StatusCreated, ok.StatusCode(), string(ok.Body))
	require.Equal(t, "application/octet-stream", ok.JSON201.ContentType)

	// A quota of 1500 bytes: the 1000 in use leave room for 500.
	pol, err := e.admin().PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{BlobQuotaBytes: client.Value(int64(1500))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pol.StatusCode(), string(pol.Body))
	require.Equal(t, int64(1500), pol.JSON200.BlobQuotaBytes)
	full := upload(t, w, "", bytes.Repeat([]byte("q"), 501))
	require.Equal(t, http.StatusRequestEntityTooLarge, full.StatusCode(), string(full.Body))
	requireProblem(t, full.ApplicationProblemJSON413, 413, client.ProblemCodePayloadTooLarge)
	require.Equal(t, int64(1500), *full.ApplicationProblemJSON413.Limit)
	require.Contains(t, full.ApplicationProblemJSON413.Detail, "quota of 1500 bytes (1000 in use)")
	fits := upload(t, w, "", bytes.Repeat([]byte("q"), 500))
	require.Equal(t, http.StatusCreated, fits.StatusCode(), string(fits.Body))
	// At the quota, the same bytes again take no more room.
	dup := upload(t, w, "", bytes.Repeat([]byte("q"), 500))
	require.Equal(t, http.StatusOK, dup.StatusCode(), string(dup.Body))

	// What was refused is nowhere: not readable, no file, no temporary file.
	for _, refused := range [][]byte{bytes.Repeat([]byte("x"), 1001), bytes.Repeat([]byte("y"), 1500), bytes.Repeat([]byte("q"), 501)} {
		got, err := w.GetBlobWithResponse(ctx, shaOf(refused), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, got.StatusCode())
	}
	files, err := filepath.Glob(filepath.Join(e.blobDir(), "acme", "*", "*"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	tmp, err := os.ReadDir(filepath.Join(e.blobDir(), ".tmp"))
	require.NoError(t, err)
	require.Empty(t, tmp)
}

func TestBlobBadInputIs400AndChangesNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("acme", "head", "dispatcher")
	d := e.dispatcher()
	ctx := context.Background()

	for _, tc := range []struct {
		name, ct, body, field string
	}{
		{"bad content type", "not a type", "x", "Content-Type"},
		{"multipart without boundary", "multipart/form-data", "x", "Content-Type"},
	} {
		resp, b := e.raw(http.MethodPost, "/v1/blobs", tok, tc.ct, tc.body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.name+": "+string(b))
		require.Contains(t, string(b), `"field":"`+tc.field+`"`, tc.name)
	}
	ct, body := multipartBody(t, [3]string{"other", "", "x"}, [3]string{"file", "", "y"})
	resp, b := e.raw(http.MethodPost, "/v1/blobs", tok, ct, string(body))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"field":"other"`)
	ct, body = multipartBody(t)
	resp, b = e.raw(http.MethodPost, "/v1/blobs", tok, ct, string(body))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"field":"file"`)
	resp, b = e.raw(http.MethodPost, "/v1/blobs", tok, ct, "--"+strings.Split(ct, "=")[1]+"\r\ngarbage")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))

	resp, b = e.getBlob(tok, "not-a-sha", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"field":"sha256"`)
	files, err := filepath.Glob(filepath.Join(e.blobDir(), "acme", "*", "*"))
	require.NoError(t, err)
	require.Empty(t, files)

	// Nodes naming blobs: a malformed sha, an unknown blob, too many.
	unknown := shaOf([]byte("never uploaded"))
	cr, err := d.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("n1"), Type: "task", Blobs: &[]string{"xyz"}})
	require.NoError(t, err)
	requireProblem(t, cr.ApplicationProblemJSON400, 400, client.ProblemCodeBadRequest)
	require.Equal(t, "blobs[0]", cr.ApplicationProblemJSON400.Field)
	cr, err = d.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("n1"), Type: "task", Blobs: &[]string{unknown}})
	require.NoError(t, err)
	requireProblem(t, cr.ApplicationProblemJSON400, 400, client.ProblemCodeBadRequest)
	require.Equal(t, "blobs[0]", cr.ApplicationProblemJSON400.Field)
	many := make([]string, 101)
	for i := range many {
		many[i] = shaOf([]byte{byte(i)})
	}
	cr, err = d.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("n1"), Type: "task", Blobs: &many})
	require.NoError(t, err)
	requireProblem(t, cr.ApplicationProblemJSON400, 400, client.ProblemCodeBadRequest)
	require.Equal(t, "blobs", cr.ApplicationProblemJSON400.Field)
	bc, err := d.CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: []client.NodeCreate{
		{ID: ptr("n1"), Type: "task"}, {ID: ptr("n2"), Type: "task", Blobs: &[]string{unknown}},
	}})
	require.NoError(t, err)
	requireProblem(t, bc.ApplicationProblemJSON400, 400, client.ProblemCodeBadRequest)
	require.Equal(t, "items[1].blobs[0]", bc.ApplicationProblemJSON400.Field)
	got, err := d.GetNodeWithResponse(ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, got.StatusCode(), "a refused batch creates nothing")

	e.mustCreate(client.NodeCreate{ID: ptr("n1"), Type: "task"})
	pr, err := d.UpdateNodeWithResponse(ctx, "n1", nil, client.NodePatch{Blobs: client.Value([]string{unknown})})
	require.NoError(t, err)
	requireProblem(t, pr.ApplicationProblemJSON400, 400, client.ProblemCodeBadRequest)
	require.Equal(t, "blobs[0]", pr.ApplicationProblemJSON400.Field)
	n := e.node("n1")
	require.Equal(t, int64(1), n.Version)
	require.Empty(t, n.Blobs)
}

func TestBlobsAreSealedPerTenant(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	acme := e.user("alice", "worker")
	other := e.as(e.token("other", "olga", "dispatcher"))
	data := []byte("acme's secret")
	sha := shaOf(data)
	require.Equal(t, http.StatusCreated, upload(t, acme, "text/plain", data).StatusCode())

	got, err := other.GetBlobWithResponse(ctx, sha, nil)
	require.NoError(t, err)
	requireProblem(t, got.ApplicationProblemJSON404, 404, client.ProblemCodeNotFound)
	cr, err := other.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("x"), Type: "task", Blobs: &[]string{sha}})
	require.NoError(t, err)
	requireProblem(t, cr.ApplicationProblemJSON400, 400, client.ProblemCodeBadRequest)

	// The same bytes uploaded by the other tenant are its own new blob.
	mine := upload(t, other, "application/x-other", data)
	require.Equal(t, http.StatusCreated, mine.StatusCode(), string(mine.Body))
	require.Equal(t, "application/x-other", mine.JSON201.ContentType)
	still, err := acme.GetBlobWithResponse(ctx, sha, nil)
	require.NoError(t, err)
	require.Equal(t, "text/plain", still.HTTPResponse.Header.Get("Content-Type"))
}

func TestBlobReferencedByANodeIsKeptAndAnUnreferencedOneCollected(t *testing.T) {
	t.Parallel()
	e := start(t, withBlobs(0, time.Hour))
	// The sweeps run on the fake clock, so none can have run yet.
	e.srv.Blobs.TestSignals.Swept.Init(t)
	ctx := context.Background()
	d := e.dispatcher()
	w := e.user("alice", "worker")
	input, output, loose := []byte("input"), []byte("output"), []byte("loose")
	for _, b := range [][]byte{input, output, loose} {
		require.Equal(t, http.StatusCreated, upload(t, w, "", b).StatusCode())
	}
	// Named at create (and in a batch), and by the holder's PATCH.
	n := e.mustCreate(client.NodeCreate{ID: ptr("job"), Type: "task", Queue: ptr("default"), Blobs: &[]string{shaOf(input), shaOf(input)}})
	require.Equal(t, []string{shaOf(input)}, n.Blobs)
	bc, err := d.CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: []client.NodeCreate{
		{ID: ptr("b1"), Type: "task", Blobs: &[]string{shaOf(input)}},
	}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, bc.StatusCode(), string(bc.Body))
	e.mustClaim(w, "job", 60000)
	pr, err := w.UpdateNodeWithResponse(ctx, "job", nil, client.NodePatch{Blobs: client.Value([]string{shaOf(input), strings.ToUpper(shaOf(output))})})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pr.StatusCode(), string(pr.Body))
	require.Equal(t, []string{shaOf(input), shaOf(output)}, pr.JSON200.Blobs)
	e.mustComplete(w, "job", nil)

	// Tokens are minted afresh after each move of the clock (they expire in an hour of it).
	exists := func(b []byte) bool {
		res, err := e.user("alice", "worker").GetBlobWithResponse(ctx, shaOf(b), nil)
		require.NoError(t, err)
		require.Contains(t, []int{http.StatusOK, http.StatusNotFound}, res.StatusCode(), string(res.Body))
		return res.StatusCode() == http.StatusOK
	}
	sweep := func(d time.Duration) int {
		e.clk.Advance(d)
		done := e.srv.Blobs.TestSignals.Swept.Wait(t)
		require.NoError(t, done.Err)
		return done.Collected
	}
	// Just short of the grace period nothing goes; past it the loose one does.
	require.Equal(t, 0, sweep(59*time.Minute))
	require.Equal(t, 1, sweep(2*time.Minute))
	require.False(t, exists(loose))
	require.True(t, exists(input))
	require.True(t, exists(output))

	// Deleting the node drops its references: output goes a grace period
	// later, input stays while b1 names it.
	resp, b := e.raw(http.MethodDelete, "/v1/nodes/job", e.token("acme", "head", "dispatcher"), "", "")
	require.Equal(t, http.StatusNoContent, resp.StatusCode, string(b))
	require.Equal(t, 0, sweep(30*time.Minute))
	// Uploading output again restarts its grace period.
	require.Equal(t, http.StatusOK, upload(t, e.user("alice", "worker"), "", output).StatusCode())
	require.Equal(t, 0, sweep(31*time.Minute))
	require.True(t, exists(output))
	require.Equal(t, 1, sweep(30*time.Minute))
	require.False(t, exists(output))
	require.True(t, exists(input))
	files, err := filepath.Glob(filepath.Join(e.blobDir(), "acme", "*", "*"))
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(e.blobDir(), "acme", shaOf(input)[:2], shaOf(input))}, files)

	// A collected blob can be uploaded again.
	require.Equal(t, http.StatusCreated, upload(t, e.user("alice", "worker"), "", loose).StatusCode())
}
