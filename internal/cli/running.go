package cli

// What is running now (tether leases) and who ran a node (tether history).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) leasesCommand() *cobra.Command {
	var holder, queue string
	var watch bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "leases",
		Short: "What is running right now: every live lease",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			params := client.ListLeasesParams{Holder: ifSet(cmd, "holder", holder), Queue: ifSet(cmd, "queue", queue)}
			show := func(w io.Writer) error { return c.showLeases(cmd.Context(), w, api, params) }
			if !watch {
				return show(cmd.OutOrStdout())
			}
			if every <= 0 {
				return usageErrorf("--interval must be positive")
			}
			return c.watch(cmd.Context(), cmd.OutOrStdout(), every, show)
		},
	}
	f := cmd.Flags()
	f.StringVar(&holder, "holder", "", "only leases held by this identity")
	f.StringVar(&queue, "queue", "", "only leases on nodes of this queue")
	f.BoolVarP(&watch, "watch", "w", false, "redraw every --interval until interrupted")
	f.DurationVar(&every, "interval", 2*time.Second, "how often --watch redraws")
	return cmd
}

func (c *cli) showLeases(ctx context.Context, w io.Writer, api *client.ClientWithResponses, params client.ListLeasesParams) error {
	var leases []client.Lease
	raw, err := allPages(func(cursor *string) ([]byte, *string, error) {
		params.Cursor, params.Limit = cursor, new(1000)
		res, err := askWith(c, api, func(api *apiClient) (*client.ListLeasesResponse, error) {
			return api.ListLeasesWithResponse(ctx, &params)
		})
		if err != nil {
			return nil, nil, err
		}
		leases = append(leases, res.JSON200.Items...)
		return res.Body, res.JSON200.NextCursor, nil
	})
	if err != nil {
		return err
	}
	return c.emit(w, raw, func(w io.Writer) {
		sort.SliceStable(leases, func(i, j int) bool { return leases[i].ExpiresAt.Before(leases[j].ExpiresAt) })
		fmt.Fprintln(w, "NODE\tHOLDER\tSESSION\tFENCE\tTTL\tCLAIMED\tRENEWED\tEXPIRES")
		for _, l := range leases {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", l.NodeID, l.By, orDash(l.Session), l.Fence,
				humanDuration(time.Duration(l.TTLMS)*time.Millisecond), relative(l.ClaimedAt), relative(l.RenewedAt), relative(l.ExpiresAt))
		}
		if len(leases) == 0 {
			fmt.Fprintln(w, "(nothing is running)")
		}
	})
}

// watch calls show every interval until ctx ends, redrawing the screen on a
// terminal and separating the frames elsewhere. A failed frame shows its
// error and the next one tries again.
func (c *cli) watch(ctx context.Context, w io.Writer, every time.Duration, show func(io.Writer) error) error {
	f, ok := w.(*os.File)
	tty := false
	if ok {
		if st, err := f.Stat(); err == nil {
			tty = st.Mode()&os.ModeCharDevice != 0
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var frame bytes.Buffer
		if !c.json() {
			fmt.Fprintf(&frame, "Every %s: tether leases  %s\n\n", every, time.Now().Format(time.TimeOnly))
		}
		if err := show(&frame); err != nil {
			fmt.Fprintf(&frame, "tether: %v\n", err)
		}
		if tty {
			io.WriteString(w, "\x1b[H\x1b[2J")
		}
		if _, err := w.Write(frame.Bytes()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if !tty && !c.json() {
			fmt.Fprintln(w)
		}
	}
}

func (c *cli) historyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "history <id>",
		Short: "Who carried a node: every claim, live and ended, with its fence and outcome",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			var edges []client.Edge
			out, assigned, retired := client.EdgeDirectionOut, "assigned", true
			raw, err := allPages(func(cursor *string) ([]byte, *string, error) {
				res, err := askWith(c, api, func(api *apiClient) (*client.ListNodeEdgesResponse, error) {
					return api.ListNodeEdgesWithResponse(cmd.Context(), a[0], &client.ListNodeEdgesParams{
						Dir: &out, Type: &assigned, IncludeRetired: &retired, Limit: new(1000), Cursor: cursor,
					})
				})
				if err != nil {
					return nil, nil, err
				}
				edges = append(edges, res.JSON200.Items...)
				return res.Body, res.JSON200.NextCursor, nil
			})
			if err != nil {
				return err
			}
			return c.emit(cmd.OutOrStdout(), raw, func(w io.Writer) { historyTable(w, edges) })
		},
	}
}

func historyTable(w io.Writer, edges []client.Edge) {
	fence := func(e client.Edge) float64 { f, _ := e.Props["fence"].(float64); return f }
	sort.SliceStable(edges, func(i, j int) bool { return fence(edges[i]) < fence(edges[j]) })
	fmt.Fprintln(w, "FENCE\tHOLDER\tSESSION\tOUTCOME\tCLAIMED\tENDED\tRAN")
	for _, e := range edges {
		outcome, ended, ran := "running", "-", time.Since(e.CreatedAt)
		if e.RetiredAt != nil {
			outcome, ended, ran = "-", stamp(*e.RetiredAt), e.RetiredAt.Sub(e.CreatedAt)
			if o, ok := e.Props["outcome"].(string); ok {
				outcome = o
			}
		}
		session := "-"
		if s, ok := e.Props["session"].(string); ok && s != "" {
			session = s
		}
		fmt.Fprintf(w, "%g\t%s\t%s\t%s\t%s\t%s\t%s\n", fence(e), strings.TrimPrefix(e.To, "identity:"), session,
			outcome, stamp(e.CreatedAt), ended, humanDuration(ran))
	}
	if len(edges) == 0 {
		fmt.Fprintln(w, "(never claimed)")
	}
}

// allPages calls page with each next cursor until there is none, and returns
// the items of every page as one list in the API's shape.
func allPages(page func(cursor *string) ([]byte, *string, error)) ([]byte, error) {
	var items []json.RawMessage
	var cursor *string
	for {
		body, next, err := page(cursor)
		if err != nil {
			return nil, err
		}
		var p struct{ Items []json.RawMessage }
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("error reading the server's answer: %w", err)
		}
		items = append(items, p.Items...)
		if next == nil || *next == "" {
			break
		}
		cursor = next
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	return json.Marshal(map[string]any{"items": items, "next_cursor": nil})
}
