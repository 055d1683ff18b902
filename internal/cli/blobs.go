package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) blobCommand() *cobra.Command {
	return groupCommand("blob", "Store and read blobs (files nodes can reference)",
		c.blobPutCommand(), c.blobGetCommand())
}

// transferAPI is api() without the overall timeout of a call: a blob may
// take longer than a long poll to move.
func (c *cli) transferAPI() (*client.ClientWithResponses, error) {
	if err := c.checkOutput(); err != nil {
		return nil, err
	}
	if c.token == "" {
		if _, err := envToken("TETHER_TOKEN"); err != nil {
			return nil, err
		}
	}
	retry, err := c.retryOption()
	if err != nil {
		return nil, err
	}
	opts := []client.ClientOption{client.WithHTTPClient(&http.Client{}), retry}
	if tok := c.bearer(); tok != "" {
		opts = append(opts, client.WithBearerToken(tok))
	}
	return client.NewClientWithResponses(c.serverURL(), opts...)
}

func (c *cli) blobPutCommand() *cobra.Command {
	var contentType string
	cmd := &cobra.Command{
		Use:   "put FILE",
		Short: "Upload a file as a blob and print its sha256",
		Long: `Upload FILE (- for stdin) as a blob of your tenant, streamed. Its content type is
--type, or guessed from the file's extension (application/octet-stream when
unknown). The same bytes uploaded twice are stored once: the second upload
answers with the blob as it is. Reference the sha256 from a node (blobs) to keep
the blob: one no node references is collected after the server's grace period.`,
		Example: `  sha=$(tether blob put report.pdf -o json | jq -r .sha256)
  tether nodes create --type review --queue default --blob "$sha"`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			api, err := c.transferAPI()
			if err != nil {
				return err
			}
			body, size, err := openUpload(cmd, a[0])
			if err != nil {
				return err
			}
			defer body.Close()
			if contentType == "" {
				contentType = mime.TypeByExtension(filepath.Ext(a[0]))
			}
			if contentType == "" {
				contentType = "application/octet-stream"
			}
			// A known length lets the server refuse a file over its limit at once.
			setLength := func(_ context.Context, req *http.Request) error {
				if size >= 0 {
					req.ContentLength = size
				}
				return nil
			}
			res, err := askWith(c, api, func(api *apiClient) (*client.UploadBlobResponse, error) {
				return api.UploadBlobWithBodyWithResponse(cmd.Context(), contentType, body, setLength)
			})
			if err != nil {
				return err
			}
			b := res.JSON201
			if b == nil {
				b = res.JSON200
			}
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) {
				fmt.Fprintln(w, "SHA256\tSIZE\tCONTENT_TYPE\tNEW")
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", b.Sha256, b.Size, b.ContentType, yesNo(res.JSON201 != nil))
			})
		},
	}
	cmd.Flags().StringVar(&contentType, "type", "", "the blob's content type (default: from the file's extension)")
	return cmd
}

// openUpload opens the file to upload (stdin for -) and its size (-1 when
// unknown).
func openUpload(cmd *cobra.Command, path string) (io.ReadCloser, int64, error) {
	if path == "-" {
		return io.NopCloser(cmd.InOrStdin()), -1, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, usageErrorf("cannot read %s: %v", path, errors.Unwrap(err))
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, usageErrorf("%s is not a regular file", path)
	}
	return f, st.Size(), nil
}

func (c *cli) blobGetCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "get SHA256 [--out FILE]",
		Short: "Download a blob to stdout or a file",
		Long: `Download a blob of your tenant, streamed, to stdout or, with --out, to FILE. The
bytes are checked against the sha256 as they arrive; on a mismatch or any error
a partial FILE is removed. -o stays the output format of every command (here:
-o json prints an error as its problem document).`,
		Example: `  tether blob get 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 --out report.pdf`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if c.checkOutput() != nil {
				return usageErrorf("-o is the output format (table, json or id), not %q: write the blob to a file with --out %s", c.output, c.output)
			}
			api, err := c.transferAPI()
			if err != nil {
				return err
			}
			sha := strings.ToLower(a[0])
			resp, err := api.GetBlob(cmd.Context(), sha, nil)
			if err != nil {
				return c.unreachable(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode >= 400 {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				return c.check(resp, body)
			}
			if out == "" || out == "-" {
				return copyChecked(cmd.OutOrStdout(), resp.Body, sha)
			}
			return writeBlobFile(out, resp.Body, sha)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the blob to this file instead of stdout (- for stdout)")
	return cmd
}

// writeBlobFile writes r to path through a temporary file beside it, renamed
// once the bytes are checked, so path never holds a partial blob.
func writeBlobFile(path string, r io.Reader, sha string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".part-*")
	if err != nil {
		return fmt.Errorf("error creating %s: %w", path, err)
	}
	err = copyChecked(tmp, r, sha)
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// copyChecked copies r to w, failing when the bytes do not hash to sha.
func copyChecked(w io.Writer, r io.Reader, sha string) error {
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(w, h), r); err != nil {
		return fmt.Errorf("error downloading the blob: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		return fmt.Errorf("the blob downloaded hashes to %s, not %s", got, sha)
	}
	return nil
}
