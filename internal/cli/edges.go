package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) edgesCommand() *cobra.Command {
	return groupCommand("edges", "Add, retire and list edges between nodes",
		c.edgesAddCommand(), c.edgesRemoveCommand(), c.edgesListCommand())
}

func (c *cli) edgesAddCommand() *cobra.Command {
	var props string
	cmd := &cobra.Command{
		Use:   "add <from> <type> <to>",
		Short: "Add an edge: depends_on (from waits for to), parent_of, or a type of your own",
		Example: `  tether edges add deploy depends_on build
  tether edges add deploy depends_on lint --props '{"on_fail": "ignore"}'`,
		Args: usageArgs(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, a []string) error {
			e := client.EdgeCreate{From: a[0], Type: a[1], To: a[2]}
			if cmd.Flags().Changed("props") {
				m, err := jsonObject("props", props)
				if err != nil {
					return err
				}
				e.Props = &m
			}
			return call(c, cmd, func(api *apiClient) (*client.CreateEdgeResponse, error) {
				return api.CreateEdgeWithResponse(cmd.Context(), e)
			}, func(w io.Writer, res *client.CreateEdgeResponse) {
				edgeTable(w, []client.Edge{*res.JSON201})
			})
		},
	}
	cmd.Flags().StringVar(&props, "props", "", "the edge's properties, a JSON object")
	return cmd
}

func (c *cli) edgesRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rm <from> <type> <to>",
		Short: "Retire a live edge (it stays in the history)",
		Args:  usageArgs(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, a []string) error {
			_, err := ask(c, func(api *apiClient) (*client.DeleteEdgeResponse, error) {
				return api.DeleteEdgeWithResponse(cmd.Context(), &client.DeleteEdgeParams{From: a[0], Type: a[1], To: a[2]})
			})
			if err != nil {
				return err
			}
			if !c.json() {
				fmt.Fprintf(cmd.OutOrStdout(), "retired %s -%s-> %s\n", a[0], a[1], a[2])
			}
			return nil
		},
	}
}

func (c *cli) edgesListCommand() *cobra.Command {
	var dir, typ, cursor string
	var retired bool
	var limit int
	cmd := &cobra.Command{
		Use:     "ls <id>",
		Aliases: []string{"list"},
		Short:   "List a node's edges",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			d := client.EdgeDirection(dir)
			if !d.Valid() {
				return usageErrorf("--dir must be out, in or both, not %q", dir)
			}
			res, err := ask(c, func(api *apiClient) (*client.ListNodeEdgesResponse, error) {
				return api.ListNodeEdgesWithResponse(cmd.Context(), a[0], &client.ListNodeEdgesParams{
					Dir: &d, Type: ifSet(cmd, "type", typ), IncludeRetired: ifSet(cmd, "include-retired", retired),
					Limit: ifSet(cmd, "limit", limit), Cursor: ifSet(cmd, "cursor", cursor),
				})
			})
			if err != nil {
				return err
			}
			nextPage(cmd, res.JSON200.NextCursor, "--cursor")
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) { edgeTable(w, res.JSON200.Items) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "both", "edges leaving the node (out), arriving at it (in), or both")
	f.StringVar(&typ, "type", "", "only edges of this type")
	f.BoolVar(&retired, "include-retired", false, "include retired edges (the API's include_retired; --retired is the same)")
	f.SetNormalizeFunc(flagAliases(map[string]string{"retired": "include-retired"}))
	f.IntVar(&limit, "limit", 100, "page size (at most 1000)")
	f.StringVar(&cursor, "cursor", "", "the next page, as printed after the previous one")
	return cmd
}

func edgeTable(w io.Writer, edges []client.Edge) {
	fmt.Fprintln(w, "FROM\tTYPE\tTO\tCREATED\tRETIRED\tPROPS")
	for _, e := range edges {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.From, e.Type, e.To,
			relative(e.CreatedAt), relativeOrDash(e.RetiredAt), compactJSON(e.Props))
	}
}
