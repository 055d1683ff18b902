package cli

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) queuesCommand() *cobra.Command {
	return groupCommand("queues", "List queues, claim their next node, pause and resume them",
		c.queuesListCommand(), c.queuesClaimCommand(), c.queuePauseCommand(true), c.queuePauseCommand(false))
}

func (c *cli) queuesListCommand() *cobra.Command {
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "The queues with their counts per status, a page at a time, by name",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := ask(c, func(api *apiClient) (*client.ListQueuesResponse, error) {
				return api.ListQueuesWithResponse(cmd.Context(), &client.ListQueuesParams{
					Limit: ifSet(cmd, "limit", limit), Cursor: ifSet(cmd, "cursor", cursor),
				})
			})
			if err != nil {
				return err
			}
			// The counts shown, in lifecycle order.
			statuses := []client.NodeStatus{client.NodeStatusQueued, client.NodeStatusRunning, client.NodeStatusDone,
				client.NodeStatusFailed, client.NodeStatusDead, client.NodeStatusCancelled, client.NodeStatusExpired}
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) {
				fmt.Fprint(w, "QUEUE\tPAUSED\tREADY")
				for _, s := range statuses {
					fmt.Fprintf(w, "\t%s", strings.ToUpper(string(s)))
				}
				fmt.Fprintln(w, "\tMAX_RUNNING\tOLDEST_READY")
				for _, q := range res.JSON200.Items {
					fmt.Fprintf(w, "%s\t%s\t%d", q.Queue, yesNo(q.Paused), q.Ready)
					for _, s := range statuses {
						fmt.Fprintf(w, "\t%d", q.Counts[string(s)])
					}
					maxRunning := "-"
					if q.MaxRunning > 0 {
						maxRunning = fmt.Sprint(q.MaxRunning)
					}
					fmt.Fprintf(w, "\t%s\t%s\n", maxRunning, relativeOrDash(q.OldestReadyAt))
				}
				if res.JSON200.NextCursor != nil {
					fmt.Fprintf(w, "(more: --cursor %s)\n", *res.JSON200.NextCursor)
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many queues (default 100, at most 1000)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue a list from its next_cursor")
	return cmd
}

func (c *cli) queuesClaimCommand() *cobra.Command {
	var ttl, wait time.Duration
	var session string
	var types, labels []string
	cmd := &cobra.Command{
		Use:   "claim <queue>",
		Short: "Claim the next ready node of a queue (highest priority, then oldest)",
		Long: `Claim the next ready node of a queue: highest priority first, then oldest.
With --wait the server holds the request until a node is ready (at most 60s).
When nothing was ready, nothing is printed on stdout and the exit code is 0;
when flow control (tether limits) held the ready nodes back, stderr says
which key, why, and when to try again.`,
		Example: `  tether queues claim default --wait 30s --ttl 10m`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if wait < 0 || wait > time.Minute {
				return usageErrorf("--wait must be from 0 to 60s")
			}
			res, err := ask(c, func(api *apiClient) (*client.ClaimNextResponse, error) {
				return api.ClaimNextWithResponse(cmd.Context(), a[0], client.ClaimNextRequest{
					TTLMS: ifSet(cmd, "ttl", millis(ttl)), WaitMS: ifSet(cmd, "wait", millis(wait)),
					Session: ifSet(cmd, "session", session), Types: ifSet(cmd, "types", types), Labels: ifSet(cmd, "labels", labels),
				})
			})
			if err != nil {
				return err
			}
			if res.StatusCode() == http.StatusNoContent {
				if th := client.ThrottleOf(res.HTTPResponse); th != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "nothing handed out from queue %s: %s on key %q; try again in %s\n",
						a[0], th.Reason, th.Key, humanDuration(th.RetryAfter))
					return nil
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "nothing ready in queue %s\n", a[0])
				return nil
			}
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) { claimLine(w, res.JSON200) })
		},
	}
	f := cmd.Flags()
	f.DurationVar(&ttl, "ttl", 0, "lease TTL (default: the tenant's)")
	f.DurationVar(&wait, "wait", 0, "wait up to this long for a node to become ready (long poll, at most 60s)")
	f.StringVar(&session, "session", "", "scope the lease to one run")
	f.StringSliceVar(&types, "types", nil, "only nodes of one of these types (comma separated or repeatable; as tether work)")
	f.StringSliceVar(&labels, "labels", nil, "only nodes carrying every one of these labels (comma separated or repeatable)")
	f.SetNormalizeFunc(flagAliases(map[string]string{"type": "types", "label": "labels"}))
	return cmd
}

func (c *cli) queuePauseCommand(pause bool) *cobra.Command {
	verb, short := "resume", "Let a paused queue hand out nodes again"
	if pause {
		verb, short = "pause", "Stop a queue from handing out nodes (running ones go on)"
	}
	return &cobra.Command{
		Use:   verb + " <queue>",
		Short: short,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			done := func(w io.Writer) { fmt.Fprintf(w, "%sd %s\n", verb, a[0]) }
			if pause {
				return call(c, cmd, func(api *apiClient) (*client.PauseQueueResponse, error) {
					return api.PauseQueueWithResponse(cmd.Context(), a[0])
				}, func(w io.Writer, _ *client.PauseQueueResponse) { done(w) })
			}
			return call(c, cmd, func(api *apiClient) (*client.ResumeQueueResponse, error) {
				return api.ResumeQueueWithResponse(cmd.Context(), a[0])
			}, func(w io.Writer, _ *client.ResumeQueueResponse) { done(w) })
		},
	}
}
