package main

// The bulk form of a node verb (cancel, requeue): the nodes a list filter
// selects, counted and confirmed before anything changes.
//
// The API has no filter-addressed batch yet (POST /v1/batch takes lease
// operations only), so the CLI lists every page of the filter first, asks,
// then calls the verb's endpoint once per node, a few at a time. A node that
// changed in between (cancelled by a cascade, requeued by someone else) gets
// the endpoint's own answer, counted and shown, never hidden.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tether-run/tether/client"
)

// bulkWorkers is how many calls a bulk action keeps in flight.
const bulkWorkers = 4

// nodeFilter is the list filters a bulk action takes: those of nodes ls.
type nodeFilter struct {
	typ, status, queue, label, target, parent, holder string
	yes                                               bool
}

var nodeFilterFlags = []string{"type", "status", "queue", "label", "target", "parent", "holder"}

func (f *nodeFilter) flags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.typ, "type", "", "bulk: the nodes of this type")
	fs.StringVar(&f.status, "status", "", "bulk: the nodes in this status")
	fs.StringVar(&f.queue, "queue", "", "bulk: the nodes in this queue")
	fs.StringVar(&f.label, "label", "", "bulk: the nodes carrying this label")
	fs.StringVar(&f.target, "target", "", "bulk: the nodes targeted at this identity")
	fs.StringVar(&f.parent, "parent", "", "bulk: the children of this node")
	fs.StringVar(&f.holder, "holder", "", "bulk: the nodes whose live lease this identity holds")
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

func (f *nodeFilter) params(cmd *cobra.Command) client.ListNodesParams {
	p := client.ListNodesParams{
		Type: ifSet(cmd, "type", f.typ), Queue: ifSet(cmd, "queue", f.queue), Label: ifSet(cmd, "label", f.label),
		Target: ifSet(cmd, "target", f.target), Parent: ifSet(cmd, "parent", f.parent), Holder: ifSet(cmd, "holder", f.holder),
	}
	if cmd.Flags().Changed("status") {
		s := client.NodeStatus(f.status)
		p.Status = &s
	}
	limit := 1000
	p.Limit = &limit
	return p
}

// selectIDs is the ids a node verb acts on: its arguments, or every node the
// filter flags select (one of the two, never both).
func (c *cli) selectIDs(cmd *cobra.Command, api *client.ClientWithResponses, f *nodeFilter, args []string) (ids []string, bulk bool, err error) {
	given := f.given(cmd)
	switch {
	case len(args) > 0 && len(given) > 0:
		return nil, false, usageErrorf("give node ids or filters (--%s), not both", strings.SplitN(given[0], "=", 2)[0])
	case len(args) > 0:
		return args, false, nil
	case len(given) == 0:
		return nil, false, usageErrorf("give node ids, or filters for a bulk %s (--status, --queue, --type, --label, --target, --parent, --holder)", cmd.Name())
	}
	p := f.params(cmd)
	for {
		res, err := api.ListNodesWithResponse(cmd.Context(), &p)
		if err != nil {
			return nil, true, c.unreachable(err)
		}
		if err := c.check(res.HTTPResponse, res.Body); err != nil {
			return nil, true, err
		}
		for _, n := range res.JSON200.Items {
			ids = append(ids, n.ID)
		}
		if res.JSON200.NextCursor == nil || *res.JSON200.NextCursor == "" {
			return ids, true, nil
		}
		p.Cursor = res.JSON200.NextCursor
	}
}

// confirmBulk asks before a bulk action: on a terminal, a y/N question;
// elsewhere it refuses unless --yes was given. It says how many nodes the
// action will touch either way.
func confirmBulk(cmd *cobra.Command, f *nodeFilter, verb string, ids []string) error {
	what := fmt.Sprintf("%s %d node%s (%s)", verb, len(ids), plural(len(ids)), strings.Join(f.given(cmd), ", "))
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

// bulkFailure is one node a bulk action could not change, and why.
type bulkFailure struct {
	id  string
	err error
}

// runBulk calls act for every id, bulkWorkers at a time, and reports:
// "cancelled 48 of 50 nodes" on stdout, each failure on stderr. It fails when
// any node failed.
func runBulk(ctx context.Context, stdout, stderr io.Writer, past string, ids []string, act func(context.Context, string) error) error {
	work := make(chan string)
	var mu sync.Mutex
	var failed []bulkFailure
	var wg sync.WaitGroup
	for range min(bulkWorkers, len(ids)) {
		wg.Go(func() {
			for id := range work {
				if err := act(ctx, id); err != nil {
					mu.Lock()
					failed = append(failed, bulkFailure{id, err})
					mu.Unlock()
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	sort.Slice(failed, func(i, j int) bool { return failed[i].id < failed[j].id })
	for _, f := range failed {
		fmt.Fprintf(stderr, "%s: %s\n", f.id, firstLine(f.err.Error()))
	}
	fmt.Fprintf(stdout, "%s %d of %d node%s\n", past, len(ids)-len(failed), len(ids), plural(len(ids)))
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d node%s not %s", len(failed), len(ids), plural(len(ids)), past)
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
