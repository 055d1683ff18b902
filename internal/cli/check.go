package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/graphstore"
)

func checkCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check DATA_DIR",
		Short: "Verify a stopped server's data directory: records against each other",
		Long: `Verify the records in DATA_DIR against each other: every record decodes;
both ends of each live edge exist and parents match their parent_of edges; a
running node's lease fence is its last fence, with a live assigned edge that
carries it; retired edges have both sides; event seqs strictly increase and
every per-node pointer names an event of that node; each live edge's seq is its
edge_added event; the blocker counts and the ready set recounted from the
edges agree with what the server derives at start; every record another
package owns (tenants, API keys, workers, messages, schedules, runs) is one
MessagePack map. A directory of a store format this release does not open,
or one a newer release wrote record fields into that this one does not know,
is refused as the server refuses it (docs/upgrades.md).

The server must not be running on DATA_DIR. Exits 1 on any disagreement.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := graphstore.Check(args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(out, "format %d: %d nodes, %d live edges, %d retired edges, %d events in %d groups, %d ready, %d other records\n",
					rep.Format, rep.Nodes, rep.LiveEdges, rep.RetiredEdges, rep.Events, rep.EventGroups, rep.Ready, rep.ForeignRecords)
				for _, p := range rep.Problems {
					fmt.Fprintln(out, "problem:", p)
				}
			}
			if len(rep.Problems) > 0 {
				return fmt.Errorf("%d problems in %s", len(rep.Problems), args[0])
			}
			if !asJSON {
				fmt.Fprintln(out, "ok")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
