package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

// followWait is how long one long poll of `events --follow` waits.
const followWait = 30 * time.Second

func (c *cli) eventsCommand() *cobra.Command {
	var after int64
	var limit int
	var node string
	var follow bool
	cmd := &cobra.Command{
		Use:   "events",
		Short: "The tenant's changes, oldest first; --follow waits for new ones",
		Long: `The tenant's changes (created, claimed, completed, expired, edge_added, ...),
oldest first, from after --after. With --follow it keeps printing new events as
they commit (a long poll), until interrupted; -o json then prints one event per line.`,
		Example: `  tether events --after 120
  tether events --follow --node task-1`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			if follow {
				return c.followEvents(cmd.Context(), cmd, api, after, node)
			}
			var list *client.EventList
			var body []byte
			if node != "" {
				res, err := ask(c, func(api *apiClient) (*client.ListNodeEventsResponse, error) {
					return api.ListNodeEventsWithResponse(cmd.Context(), node, &client.ListNodeEventsParams{After: &after, Limit: &limit})
				})
				if err != nil {
					return err
				}
				list, body = res.JSON200, res.Body
			} else {
				res, err := ask(c, func(api *apiClient) (*client.ListEventsResponse, error) {
					return api.ListEventsWithResponse(cmd.Context(), &client.ListEventsParams{After: &after, Limit: &limit})
				})
				if err != nil {
					return err
				}
				list, body = res.JSON200, res.Body
			}
			if len(list.Items) == limit { // next_cursor is set on every page that is not empty
				nextPage(cmd, list.NextCursor, "--after")
			}
			return c.emit(cmd.OutOrStdout(), body, func(w io.Writer) {
				fmt.Fprintln(w, "SEQ\tAT\tTYPE\tNODE\tBY\tDATA")
				for _, e := range list.Items {
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Seq, stamp(e.At), e.Type, e.NodeID, e.By, compactJSON(e.Data))
				}
			})
		},
	}
	f := cmd.Flags()
	f.Int64Var(&after, "after", 0, "only events after this seq")
	f.IntVar(&limit, "limit", 100, "page size (at most 1000)")
	f.StringVar(&node, "node", "", "only the events of this node")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new events until interrupted")
	return cmd
}

// followEvents long-polls GET /v1/events from after on, until ctx ends. A
// server that cannot be reached or answers 5xx is retried; it may be
// restarting.
func (c *cli) followEvents(ctx context.Context, cmd *cobra.Command, api *client.ClientWithResponses, after int64, node string) error {
	w := cmd.OutOrStdout()
	if !c.json() {
		fmt.Fprintf(w, "%-8s %-24s %-12s %-24s %-12s %s\n", "SEQ", "AT", "TYPE", "NODE", "BY", "DATA")
	}
	wait, limit := int(followWait.Milliseconds()), 1000
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		res, err := askWith(c, api, func(api *apiClient) (*client.ListEventsResponse, error) {
			return api.ListEventsWithResponse(ctx, &client.ListEventsParams{After: &after, WaitMS: &wait, Limit: &limit})
		})
		if err != nil {
			var p *client.Problem
			if ctx.Err() != nil || (errors.As(err, &p) && p.Status < 500) {
				return ignoreCanceled(ctx, err)
			}
			backoff = min(max(2*backoff, time.Second), 10*time.Second)
			fmt.Fprintf(cmd.ErrOrStderr(), "tether: %v; retrying in %s\n", err, backoff)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		var raw struct{ Items []json.RawMessage }
		if err := json.Unmarshal(res.Body, &raw); err != nil {
			return fmt.Errorf("error reading the server's answer: %w", err)
		}
		for i, e := range res.JSON200.Items {
			after = e.Seq
			if node != "" && e.NodeID != node {
				continue
			}
			if c.json() {
				var line bytes.Buffer
				if err := json.Compact(&line, raw.Items[i]); err != nil {
					return fmt.Errorf("error reading the server's answer: %w", err)
				}
				fmt.Fprintf(w, "%s\n", line.Bytes())
				continue
			}
			fmt.Fprintf(w, "%-8d %-24s %-12s %-24s %-12s %s\n", e.Seq, stamp(e.At), e.Type, e.NodeID, e.By, compactJSON(e.Data))
		}
	}
	return nil
}

// ignoreCanceled is nil when err is only the end of ctx (an interrupt).
func ignoreCanceled(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
