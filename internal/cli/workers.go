package cli

// tether workers: the worker registry, in the words the API and the
// dashboard use (state: idle, working, stale or offline).

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) workersCommand() *cobra.Command {
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List the tenant's workers and their state (idle, working, stale, offline)",
		Long: `List the tenant's workers, as their heartbeats describe them. STATE is the
word the API (state) and the dashboard show: idle or working as the worker said,
stale when it went silent without saying goodbye, offline when it stopped
cleanly. Offline workers are forgotten TETHER_WORKER_OFFLINE_RETENTION_MS after
their goodbye (10 minutes by default), silent ones after a day.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(c, cmd, func(api *apiClient) (*client.ListWorkersResponse, error) {
				return api.ListWorkersWithResponse(cmd.Context(), &client.ListWorkersParams{
					Limit: ifSet(cmd, "limit", limit), Cursor: ifSet(cmd, "cursor", cursor),
				})
			}, func(w io.Writer, res *client.ListWorkersResponse) { workersTable(w, res.JSON200) })
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many workers (default 100)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue a list from its next_cursor")
	return cmd
}

func workersTable(w io.Writer, list *client.WorkerList) {
	fmt.Fprintln(w, "BY\tWORKER\tSTATE\tNODE\tLAST_SEEN")
	for _, wk := range list.Items {
		node := "-"
		if wk.Node != nil {
			node = *wk.Node
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", wk.By, wk.Worker, wk.State, node, relative(wk.LastSeenAt))
	}
	if list.NextCursor != nil {
		fmt.Fprintf(w, "(more: --cursor %s)\n", *list.NextCursor)
	}
}
