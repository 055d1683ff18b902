package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) nodesCommand() *cobra.Command {
	return groupCommand("nodes", "List, show, create, change and delete nodes",
		c.nodesListCommand(), c.nodesGetCommand(), c.nodesCreateCommand(), c.nodesPatchCommand(), c.nodesRemoveCommand())
}

func (c *cli) nodesListCommand() *cobra.Command {
	var p client.ListNodesParams
	var typ, status, queue, label, target, parent, holder, cursor string
	var ready bool
	var limit int
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List nodes, highest priority then oldest first",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.Type, p.Queue, p.Label = ifSet(cmd, "type", typ), ifSet(cmd, "queue", queue), ifSet(cmd, "label", label)
			p.Target, p.Parent, p.Holder = ifSet(cmd, "target", target), ifSet(cmd, "parent", parent), ifSet(cmd, "holder", holder)
			p.Ready, p.Limit, p.Cursor = ifSet(cmd, "ready", ready), ifSet(cmd, "limit", limit), ifSet(cmd, "cursor", cursor)
			if cmd.Flags().Changed("status") {
				s := client.NodeStatus(status)
				p.Status = &s
			}
			res, err := ask(c, func(api *apiClient) (*client.ListNodesResponse, error) {
				return api.ListNodesWithResponse(cmd.Context(), &p)
			})
			if err != nil {
				return err
			}
			nextPage(cmd, res.JSON200.NextCursor, "--cursor")
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) {
				fmt.Fprintln(w, "ID\tTYPE\tSTATUS\tREADY\tQUEUE\tPRI\tTRIES\tHOLDER\tEXPIRES\tTITLE")
				for _, n := range res.JSON200.Items {
					holder, expires := "-", "-"
					if n.Lease != nil {
						holder, expires = n.Lease.By, relative(n.Lease.ExpiresAt)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\n", n.ID, n.Type, n.Status, yesNo(n.Ready),
						orDash(n.Queue), n.Priority, n.Attempts, n.MaxAttempts, holder, expires, n.Title)
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&typ, "type", "", "only nodes of this type")
	f.StringVar(&status, "status", "", "only nodes in this status: open, queued, running, done, failed, dead, cancelled, expired")
	f.StringVar(&queue, "queue", "", "only nodes in this queue")
	f.StringVar(&label, "label", "", "only nodes carrying this label")
	f.StringVar(&target, "target", "", "only nodes targeted at this identity")
	f.StringVar(&parent, "parent", "", "only children of this node")
	f.StringVar(&holder, "holder", "", "only nodes whose live lease this identity holds")
	f.BoolVar(&ready, "ready", false, "only nodes that are (--ready) or are not (--ready=false) claimable now")
	f.IntVar(&limit, "limit", 100, "page size (at most 1000)")
	f.StringVar(&cursor, "cursor", "", "the next page, as printed after the previous one")
	return cmd
}

func (c *cli) nodesGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get <id>",
		Short: "Show a node",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return call(c, cmd, func(api *apiClient) (*client.GetNodeResponse, error) {
				return api.GetNodeWithResponse(cmd.Context(), a[0])
			}, func(w io.Writer, res *client.GetNodeResponse) { showNode(w, res.JSON200) })
		},
	}
}

// showNode writes a node as "field: value" lines, leaving out what is unset.
func showNode(w io.Writer, n *client.Node) {
	row := func(k, format string, v ...any) { fmt.Fprintf(w, "%s:\t%s\n", k, fmt.Sprintf(format, v...)) }
	row("id", "%s", n.ID)
	row("type", "%s", n.Type)
	if n.Title != "" {
		row("title", "%s", n.Title)
	}
	row("status", "%s", n.Status)
	if n.Ready {
		row("ready", "yes")
	} else if len(n.BlockedBy) > 0 {
		row("ready", "no, blocked by %s", strings.Join(n.BlockedBy, ", "))
	}
	row("queue", "%s", orDash(n.Queue))
	row("priority", "%d", n.Priority)
	row("attempts", "%d of %d", n.Attempts, n.MaxAttempts)
	if n.Lease != nil {
		l := n.Lease
		row("holder", "%s (fence %d, session %s)", l.By, l.Fence, orDash(l.Session))
		row("expires_at", "%s (%s)", stamp(l.ExpiresAt), relative(l.ExpiresAt))
	}
	optionalRows := []struct {
		k string
		v *string
	}{{"target", n.Target}, {"parent", n.Parent}, {"error", n.Error}}
	for _, o := range optionalRows {
		if o.v != nil {
			row(o.k, "%s", *o.v)
		}
	}
	if len(n.Labels) > 0 {
		row("labels", "%s", strings.Join(n.Labels, ", "))
	}
	if len(n.Blobs) > 0 {
		row("blobs", "%s", strings.Join(n.Blobs, ", "))
	}
	if n.ConcurrencyKeys != nil && len(*n.ConcurrencyKeys) > 0 {
		row("concurrency_keys", "%s", strings.Join(*n.ConcurrencyKeys, ", "))
	}
	if n.RunAt != nil {
		row("run_at", "%s (%s)", stamp(*n.RunAt), relative(*n.RunAt))
	}
	if n.TimeoutMS != nil {
		row("timeout", "%s", humanDuration(time.Duration(*n.TimeoutMS)*time.Millisecond))
	}
	if len(n.Props) > 0 {
		row("props", "%s", compactJSON(n.Props))
	}
	if n.Traceparent != nil {
		row("traceparent", "%s", *n.Traceparent)
	}
	if n.Progress != nil {
		row("progress", "%s", progressText(n.Progress))
	}
	if n.Result != nil {
		row("result", "%s", compactJSON(n.Result))
	}
	if len(n.UsageTotal) > 0 {
		row("usage_total", "%s", counters(n.UsageTotal))
	}
	if n.Body != "" {
		row("body", "%s", n.Body)
	}
	row("version", "%d", n.Version)
	row("created", "%s by %s (%s)", stamp(n.CreatedAt), n.CreatedBy, relative(n.CreatedAt))
	row("updated", "%s (%s)", stamp(n.UpdatedAt), relative(n.UpdatedAt))
}

func progressText(p *client.Progress) string {
	var parts []string
	if p.Pct != nil {
		parts = append(parts, fmt.Sprintf("%g%%", *p.Pct))
	}
	if p.Message != nil {
		parts = append(parts, *p.Message)
	}
	return strings.Join(append(parts, relative(p.UpdatedAt)), ", ")
}

func (c *cli) nodesRemoveCommand() *cobra.Command {
	var f nodeFilter
	var force bool
	cmd := &cobra.Command{
		Use:     "rm [<id>...] [--status done --queue Q ... --yes]",
		Aliases: []string{"delete"},
		Short:   "Delete nodes (their edges are retired, not erased); by id or in bulk by filter",
		Long: `Delete nodes: their edges are retired, not erased. A running node only with
--force, which ends its lease. Needs the dispatcher role.

Name the nodes, or select them with the filters of nodes ls (--status, --queue,
--type, --label, --target, --parent, --holder, --search) for a bulk delete, one
POST /v1/nodes/bulk: it counts them first and says how many it will touch,
asking on a terminal (--yes: without asking; needed in scripts).`,
		Example: `  tether nodes rm task-1
  tether nodes rm --status cancelled --queue imports --yes`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			if bulk, err := f.isBulk(cmd, a); err != nil || bulk {
				if err != nil {
					return err
				}
				return c.runBulk(cmd, &f, client.BulkRequestActionDelete, "deleted", nil, ifSet(cmd, "force", force))
			}
			for _, id := range a {
				_, err := ask(c, func(api *apiClient) (*client.DeleteNodeResponse, error) {
					return api.DeleteNodeWithResponse(cmd.Context(), id, &client.DeleteNodeParams{Force: ifSet(cmd, "force", force)})
				})
				if err != nil {
					return err
				}
				switch c.output {
				case "id":
					fmt.Fprintln(cmd.OutOrStdout(), id)
				case "table":
					fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", id)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete a running node too, ending its lease")
	f.flags(cmd)
	return cmd
}

// nextPage tells people (on stderr, so that -o json stays clean) how to get
// the next page.
func nextPage(cmd *cobra.Command, cursor *string, flag string) {
	if cursor != nil && *cursor != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "more: %s %s\n", flag, *cursor)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
