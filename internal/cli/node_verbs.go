package cli

// The node verbs of a dispatcher: cancel and requeue, for named nodes or in
// bulk over a list filter (node_verbs_bulk.go: one POST /v1/nodes/bulk), and
// comments.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) nodeVerbCommands() []*cobra.Command {
	return []*cobra.Command{c.cancelCommand(), c.requeueCommand(), c.commentCommand(), c.commentsCommand()}
}

func (c *cli) cancelCommand() *cobra.Command {
	var f nodeFilter
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel [<id>...] [--status S --queue Q ... --yes]",
		Short: "Cancel nodes and what hangs on them (children, dependents); by id or in bulk by filter",
		Long: `Cancel nodes: each becomes cancelled with every unfinished descendant and
dependent (depends_on with on_fail: cancel), atomically; their leases end.
Needs the dispatcher role.

Name the nodes, or select them with the filters of nodes ls (--status, --queue,
--type, --label, --target, --parent, --holder, --search) for a bulk cancel, one
POST /v1/nodes/bulk: it counts them first (a dry run) and says how many it will
touch, asking on a terminal (--yes: without asking; needed in scripts), then
prints what it did and each node refused, with its reason.`,
		Example: `  tether cancel task-1 task-2 --reason "superseded"
  tether cancel --queue imports --status queued --yes`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			if bulk, err := f.isBulk(cmd, a); err != nil || bulk {
				if err != nil {
					return err
				}
				return c.runBulk(cmd, &f, client.BulkRequestActionCancel, "cancelled", ifSet(cmd, "reason", reason), nil)
			}
			return c.eachNode(cmd, a, func(ctx context.Context, api *client.ClientWithResponses, id string) (nodeAnswer, error) {
				res, err := askWith(c, api, func(api *apiClient) (*client.CancelNodeResponse, error) {
					return api.CancelNodeWithResponse(ctx, id, client.CancelRequest{Reason: ifSet(cmd, "reason", reason)})
				})
				if err != nil {
					return nodeAnswer{}, err
				}
				line := fmt.Sprintf("%s cancelled", id)
				if others := len(res.JSON200.Cancelled) - 1; others > 0 {
					line += fmt.Sprintf(" with %d more: %s", others, strings.Join(res.JSON200.Cancelled[1:], ", "))
				}
				return nodeAnswer{line: line, body: res.Body, ids: res.JSON200.Cancelled}, nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the record")
	f.flags(cmd)
	return cmd
}

func (c *cli) requeueCommand() *cobra.Command {
	var f nodeFilter
	var reason string
	cmd := &cobra.Command{
		Use:   "requeue [<id>...] [--status dead --queue Q ... --yes]",
		Short: "Bring failed, dead or cancelled nodes back to their queue with fresh attempts; by id or in bulk",
		Long: `Requeue nodes: a failed, dead or cancelled node goes back to queued (open
without a queue) with its attempts at 0 and its error cleared. Needs the
dispatcher role.

Name the nodes, or select them with the filters of nodes ls (--status, --queue,
--type, --label, --target, --parent, --holder, --search) for a bulk requeue, one
POST /v1/nodes/bulk: it counts them first (a dry run) and says how many it will
touch, asking on a terminal (--yes: without asking; needed in scripts), then
prints what it did and each node refused, with its reason.`,
		Example: `  tether requeue task-7
  tether requeue --status dead --queue imports --yes`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			if bulk, err := f.isBulk(cmd, a); err != nil || bulk {
				if err != nil {
					return err
				}
				return c.runBulk(cmd, &f, client.BulkRequestActionRequeue, "requeued", ifSet(cmd, "reason", reason), nil)
			}
			return c.eachNode(cmd, a, func(ctx context.Context, api *client.ClientWithResponses, id string) (nodeAnswer, error) {
				res, err := askWith(c, api, func(api *apiClient) (*client.RequeueNodeResponse, error) {
					return api.RequeueNodeWithResponse(ctx, id, client.RequeueRequest{Reason: ifSet(cmd, "reason", reason)})
				})
				if err != nil {
					return nodeAnswer{}, err
				}
				return nodeAnswer{line: fmt.Sprintf("%s requeued: %s", id, res.JSON200.Status), body: res.Body, ids: []string{id}}, nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the record")
	f.flags(cmd)
	return cmd
}

// nodeAnswer is what one node verb's call printed: a line for people, the
// API's answer (-o json), and the ids of the nodes it changed (-o id).
type nodeAnswer struct {
	line string
	body []byte
	ids  []string
}

// nodeAct is one node verb's call.
type nodeAct func(ctx context.Context, api *client.ClientWithResponses, id string) (nodeAnswer, error)

// eachNode runs act on the nodes named, in order, printing each answer (the
// API's JSON with -o json, the ids changed with -o id); it stops at the
// first error.
func (c *cli) eachNode(cmd *cobra.Command, ids []string, act nodeAct) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	for _, id := range ids {
		a, err := act(cmd.Context(), api, id)
		if err != nil {
			return err
		}
		if c.output == "id" {
			fmt.Fprintln(out, strings.Join(a.ids, "\n"))
			continue
		}
		if err := c.emit(out, a.body, func(w io.Writer) { fmt.Fprintln(w, a.line) }); err != nil {
			return err
		}
	}
	return nil
}

func (c *cli) commentCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "comment <id> TEXT",
		Short:   "Leave a note on a node (worker role); tether comments <id> lists them",
		Example: `  tether comment task-1 "blocked on the staging database"`,
		Args:    usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return call(c, cmd, func(api *apiClient) (*client.CreateCommentResponse, error) {
				return api.CreateCommentWithResponse(cmd.Context(), a[0], client.CommentCreate{Body: a[1]})
			}, func(w io.Writer, res *client.CreateCommentResponse) {
				fmt.Fprintf(w, "comment %s on %s by %s\n", res.JSON201.ID, res.JSON201.NodeID, res.JSON201.By)
			})
		},
	}
}

func (c *cli) commentsCommand() *cobra.Command {
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:   "comments <id>",
		Short: "The notes left on a node, oldest first",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			res, err := ask(c, func(api *apiClient) (*client.ListCommentsResponse, error) {
				return api.ListCommentsWithResponse(cmd.Context(), a[0], &client.ListCommentsParams{Limit: ifSet(cmd, "limit", limit), Cursor: ifSet(cmd, "cursor", cursor)})
			})
			if err != nil {
				return err
			}
			nextPage(cmd, res.JSON200.NextCursor, "--cursor")
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) {
				fmt.Fprintln(w, "ID\tBY\tWHEN\tBODY")
				for _, cm := range res.JSON200.Items {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", cm.ID, cm.By, relative(cm.CreatedAt), firstLine(cm.Body))
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "page size (at most 1000)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the next page, as printed after the previous one")
	return cmd
}
