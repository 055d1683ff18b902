package cli

// The bulk form of a node verb (cancel, requeue, nodes rm): every node a
// list filter selects, changed by one POST /v1/nodes/bulk. A dry run selects
// them first, so that the confirmation says how many nodes the action will
// touch, and the action is sent with the ids it selected, so that it
// touches no node the confirmation did not count; the answer then says what
// it did, node by node for refusals and nodes that no longer match.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tether-run/tether/client"
)

// nodeFilter is the list filters a bulk action takes: those of nodes ls.
type nodeFilter struct {
	typ, status, queue, label, target, parent, holder, search string
	limit                                                     int
	yes                                                       bool
}

var nodeFilterFlags = []string{"type", "status", "queue", "label", "target", "parent", "holder", "search"}

func (f *nodeFilter) flags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.typ, "type", "", "bulk: the nodes of this type")
	fs.StringVar(&f.status, "status", "", "bulk: the nodes in this status")
	fs.StringVar(&f.queue, "queue", "", "bulk: the nodes in this queue")
	fs.StringVar(&f.label, "label", "", "bulk: the nodes carrying this label")
	fs.StringVar(&f.target, "target", "", "bulk: the nodes targeted at this identity")
	fs.StringVar(&f.parent, "parent", "", "bulk: the children of this node")
	fs.StringVar(&f.holder, "holder", "", "bulk: the nodes whose live lease this identity holds")
	fs.StringVar(&f.search, "search", "", "bulk: the nodes whose id or title contains this text (any case)")
	fs.IntVar(&f.limit, "limit", 1000, "bulk: the most nodes to act on (1 to 10000); more matching ones are left alone")
	fs.BoolVarP(&f.yes, "yes", "y", false, "bulk: act without asking (needed when stdin is not a terminal)")
}

// given is the filter flags set on the command line, as name=value.
func (f *nodeFilter) given(cmd *cobra.Command) []string {
	var out []string
	for _, name := range nodeFilterFlags {
		if fl := cmd.Flags().Lookup(name); fl.Changed {
			out = append(out, name+"="+fl.Value.String())
		}
	}
	return out
}

func (f *nodeFilter) filter(cmd *cobra.Command) *client.NodeFilter {
	nf := &client.NodeFilter{
		Type: ifSet(cmd, "type", f.typ), Queue: ifSet(cmd, "queue", f.queue), Label: ifSet(cmd, "label", f.label),
		Target: ifSet(cmd, "target", f.target), Parent: ifSet(cmd, "parent", f.parent), Holder: ifSet(cmd, "holder", f.holder),
		Q: ifSet(cmd, "search", f.search),
	}
	if cmd.Flags().Changed("status") {
		s := client.NodeStatus(f.status)
		nf.Status = &s
	}
	return nf
}

// isBulk says whether the command names nodes (false) or selects them with
// filters (true), and refuses both or neither.
func (f *nodeFilter) isBulk(cmd *cobra.Command, args []string) (bool, error) {
	given := f.given(cmd)
	switch {
	case len(args) > 0 && len(given) > 0:
		return false, usageErrorf("give node ids or filters (--%s), not both", strings.SplitN(given[0], "=", 2)[0])
	case len(args) > 0:
		if cmd.Flags().Changed("yes") || cmd.Flags().Changed("limit") {
			return false, usageErrorf("--yes and --limit go with filters (a bulk %s), not with node ids", cmd.Name())
		}
		return false, nil
	case len(given) == 0:
		return false, usageErrorf("give node ids, or filters for a bulk %s (--%s)", cmd.Name(), strings.Join(nodeFilterFlags, ", --"))
	}
	return true, nil
}

// runBulk selects what the filter selects (a dry run), confirms, applies
// action to those nodes alone in one call, and reports: "cancelled 48 of 50 nodes" on
// stdout (-o json: the API's answer; -o id: the ids changed), each refusal
// on stderr. It fails when any node was refused.
func (c *cli) runBulk(cmd *cobra.Command, f *nodeFilter, action client.BulkRequestAction, past string, reason *string, force *bool) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	req := client.BulkRequest{Action: action, Filter: f.filter(cmd), Limit: &f.limit, Reason: reason, Force: force}
	call := func(dry bool) (*client.BulkResult, []byte, error) {
		req.DryRun = &dry
		res, err := askWith(c, api, func(api *apiClient) (*client.BulkNodesResponse, error) {
			return api.BulkNodesWithResponse(cmd.Context(), req)
		})
		if err != nil {
			return nil, nil, err
		}
		return res.JSON200, res.Body, nil
	}
	count, _, err := call(true)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if count.Matched == 0 {
		if !c.json() && c.output != "id" {
			fmt.Fprintf(out, "no node matches (%s): nothing to %s\n", strings.Join(f.given(cmd), ", "), action)
		}
		return nil
	}
	if err := confirmBulk(cmd, f, string(action), count); err != nil {
		return err
	}
	req.Ids = &count.Selected
	done, body, err := call(false)
	if err != nil {
		return err
	}
	for _, id := range done.Skipped {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: skipped: no longer matches\n", id)
	}
	for _, fl := range done.Failed {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d %s: %s\n", fl.ID, fl.Status, fl.Code, fl.Detail)
	}
	switch {
	case c.json():
		if err := writeJSON(out, body); err != nil {
			return err
		}
	case c.output == "id":
		for _, id := range done.Affected {
			fmt.Fprintln(out, id)
		}
	default:
		changed := done.Matched - len(done.Failed)
		fmt.Fprintf(out, "%s %d of %d node%s", past, changed, done.Matched, plural(done.Matched))
		if extra := len(done.Affected) - changed; extra > 0 {
			fmt.Fprintf(out, ", and %d more that hang on them", extra)
		}
		if n := len(done.Skipped); n > 0 {
			fmt.Fprintf(out, "; %d no longer matched, left alone", n)
		}
		if count.Truncated {
			fmt.Fprintf(out, "; more match beyond --limit %d, left alone", f.limit)
		}
		fmt.Fprintln(out)
	}
	if n := len(done.Failed); n > 0 {
		return fmt.Errorf("%d of %d node%s not %s", n, done.Matched, plural(done.Matched), past)
	}
	return nil
}

// confirmBulk asks before a bulk action: on a terminal, a y/N question;
// elsewhere it refuses unless --yes was given. Either way it says how many
// nodes the action will touch.
func confirmBulk(cmd *cobra.Command, f *nodeFilter, verb string, count *client.BulkResult) error {
	what := fmt.Sprintf("%s %d node%s (%s)", verb, count.Matched, plural(count.Matched), strings.Join(f.given(cmd), ", "))
	if count.Truncated {
		what += fmt.Sprintf(", the first --limit %d of more", f.limit)
	}
	if f.yes {
		return nil
	}
	in, ok := cmd.InOrStdin().(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return usageErrorf("would %s; add --yes to do it", what)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s? [y/N] ", what)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return errors.New("nothing changed")
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
