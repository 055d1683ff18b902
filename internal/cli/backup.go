package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/backup"
	"github.com/tether-run/tether/internal/graphstore"
)

// backupCommand is `tether backup`: an online backup from a running server.
func (c *cli) backupCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "backup [-f FILE]",
		Short: "Take an online backup of every tenant from a running server",
		Long: `Take a backup of every record of a running server, as of one instant, while
it keeps serving. Needs an operator token (one of the server's
TETHER_OPERATOR_TOKENS): --token, or TETHER_OPERATOR_TOKEN.

The backup is written to FILE (default: tether-<UTC instant>.backup in the
current directory) through a temporary file, checked (record count and
SHA-256), and only then renamed into place. Restore it with tether restore.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok := c.token
			if tok == "" {
				var err error
				if tok, err = envToken("TETHER_OPERATOR_TOKEN"); err != nil {
					return err
				}
			}
			if tok == "" {
				return usageErrorf("an operator token is required: --token or TETHER_OPERATOR_TOKEN")
			}
			if file == "" {
				file = "tether-" + time.Now().UTC().Format("20060102T150405Z") + ".backup"
			}
			st, err := c.takeBackup(cmd.Context(), tok, file)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d records (%d of them blob files), %d bytes\n", file, st.Records, st.Blobs, st.Bytes)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "where to write the backup")
	return cmd
}

func (c *cli) takeBackup(ctx context.Context, tok, file string) (backup.Stats, error) {
	retry, err := c.retryOption()
	if err != nil {
		return backup.Stats{}, err
	}
	api, err := client.NewClient(c.serverURL(), client.WithBearerToken(tok), retry)
	if err != nil {
		return backup.Stats{}, err
	}
	resp, err := api.GetBackup(ctx)
	if err != nil {
		return backup.Stats{}, c.unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return backup.Stats{}, c.check(resp, body)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".partial-")
	if err != nil {
		return backup.Stats{}, err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	defer tmp.Close()
	pr, pw := io.Pipe()
	verified := make(chan error, 1)
	var st backup.Stats
	go func() {
		var err error
		st, err = backup.Verify(pr)
		pr.CloseWithError(err)
		verified <- err
	}()
	_, copyErr := io.Copy(io.MultiWriter(tmp, pw), resp.Body)
	pw.CloseWithError(copyErr)
	if err := <-verified; err != nil {
		return st, fmt.Errorf("the backup is not whole (nothing was kept): %w", err)
	}
	if copyErr != nil {
		return st, copyErr
	}
	if err := tmp.Sync(); err != nil {
		return st, err
	}
	if err := tmp.Close(); err != nil {
		return st, err
	}
	return st, os.Rename(tmp.Name(), file)
}

// restoreCommand is `tether restore FILE DATA_DIR`.
func restoreCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "restore FILE DATA_DIR",
		Short: "Restore a backup into a new data directory, then check it",
		Long: `Restore a backup taken with tether backup into DATA_DIR, which must not exist
or be empty, then verify the restored records against each other (as tether
check does). Nothing is left in DATA_DIR unless the whole backup was read and
its record count and SHA-256 match. Start a server on DATA_DIR afterwards.`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := backup.Restore(f, args[1])
			if err != nil {
				return fmt.Errorf("error restoring %s: %w", args[0], err)
			}
			rep, err := graphstore.Check(args[1])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "restored %d records (%d blob files) into %s: %d nodes, %d events, %d ready\n",
				st.Records, st.Blobs, args[1], rep.Nodes, rep.Events, rep.Ready)
			for _, p := range rep.Problems {
				fmt.Fprintln(out, "problem:", p)
			}
			if len(rep.Problems) > 0 {
				return fmt.Errorf("%d problems in the restored %s", len(rep.Problems), args[1])
			}
			return nil
		},
	}
}
