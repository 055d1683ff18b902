package nodes_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/nodes"
)

// TestListScanBudgetPagesASearch: with a scan budget, a search reads at
// most that many records per call, answers short pages with a cursor that
// goes on where it stopped, steps over deleted nodes, and over all its
// pages lists every match once, in list order.
func TestListScanBudgetPagesASearch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var specs []nodes.NodeSpec
	for i := range 350 {
		s := spec(fmt.Sprintf("n-%03d", i), "q")
		title := "plain"
		if i%100 == 99 {
			title = "needle"
		}
		s.Title = &title
		specs = append(specs, s)
	}
	b.create(t, specs...)
	// Deleted nodes inside a budget's range count as read and are skipped.
	for _, id := range []string{"n-150", "n-151", "n-152"} {
		require.NoError(t, b.nodes.Delete(context.Background(), b.head, id, false))
	}

	search := func(text string) (found []string, pages int) {
		q := graphstore.NodeQuery{Search: text, Limit: 10, ScanBudget: 100}
		for {
			page, next, err := b.nodes.List("acme", q, nil)
			require.NoError(t, err)
			pages++
			for _, v := range page {
				found = append(found, v.ID)
			}
			if next == "" {
				return found, pages
			}
			q.Cursor = next
		}
	}
	found, pages := search("needle")
	require.Equal(t, []string{"n-099", "n-199", "n-299"}, found)
	require.Equal(t, 4, pages, "350 records read 100 at a time")
	found, pages = search("nothing")
	require.Empty(t, found)
	require.Equal(t, 4, pages)

	// Without a budget the walk is whole, in one call.
	page, next, err := b.nodes.List("acme", graphstore.NodeQuery{Search: "needle", Limit: 10}, nil)
	require.NoError(t, err)
	require.Len(t, page, 3)
	require.Empty(t, next)
}
