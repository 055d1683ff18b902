package graphstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/records"
)

func comment(t *testing.T, s *Store, tenant, id, body string) *records.Comment {
	t.Helper()
	c := &records.Comment{ID: "c-" + body, By: "alice", Body: body}
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		n, err := tx.NodeGet(tenant, id)
		if err != nil {
			return err
		}
		return tx.CommentInsert(n, c)
	}))
	return c
}

func comments(t *testing.T, s *Store, tenant, id string, after uint64, limit int) []*records.Comment {
	t.Helper()
	var out []*records.Comment
	require.NoError(t, s.View(func(tx *Tx) error {
		n, err := tx.NodeGet(tenant, id)
		if err != nil {
			return err
		}
		out, err = tx.CommentList(n, after, limit)
		return err
	}))
	return out
}

func TestCommentsListInOrderAndPageAfterSeq(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	insert(t, s, newNode("acme", "a", 0))
	insert(t, s, newNode("acme", "b", 0))
	for i := range 5 {
		comment(t, s, "acme", "a", fmt.Sprint(i))
	}
	comment(t, s, "acme", "b", "on b")

	all := comments(t, s, "acme", "a", 0, 100)
	require.Len(t, all, 5)
	for i, c := range all {
		require.Equal(t, fmt.Sprint(i), c.Body)
		require.Equal(t, "a", c.NodeID)
		if i > 0 {
			require.Greater(t, c.Seq, all[i-1].Seq)
		}
	}
	page := comments(t, s, "acme", "a", all[1].Seq, 2)
	require.Equal(t, []string{"2", "3"}, []string{page[0].Body, page[1].Body})
	require.Empty(t, comments(t, s, "acme", "a", all[4].Seq, 10))
}

func TestCommentAppendsItsEventInTheSameTransaction(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	insert(t, s, newNode("acme", "a", 0))
	c := comment(t, s, "acme", "a", "hello")
	require.NoError(t, s.View(func(tx *Tx) error {
		evs, err := tx.NodeEvents("acme", "a", 0, 10)
		require.NoError(t, err)
		last := evs[len(evs)-1]
		require.Equal(t, records.EventCommented, last.Type)
		require.Equal(t, c.Seq, last.Seq, "the comment takes the seq of its event")
		require.Equal(t, "alice", last.By)
		require.Equal(t, map[string]any{"comment_id": c.ID}, last.Data.Map())
		return nil
	}))

	boom := errors.New("boom")
	err := s.Update(context.Background(), func(tx *Tx) error {
		n, err := tx.NodeGet("acme", "a")
		if err != nil {
			return err
		}
		if err := tx.CommentInsert(n, &records.Comment{ID: "lost", By: "alice", Body: "lost"}); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Len(t, comments(t, s, "acme", "a", 0, 10), 1, "a failed transaction keeps no comment")
	require.NoError(t, s.View(func(tx *Tx) error {
		evs, err := tx.NodeEvents("acme", "a", c.Seq, 10)
		require.Empty(t, evs, "and no event")
		return err
	}))
}

func TestCommentsStayWithTheirTenantAndIncarnation(t *testing.T) {
	t.Parallel()
	s, clk := setup(t)
	insert(t, s, newNode("acme", "a", 0))
	insert(t, s, newNode("other", "a", 0))
	comment(t, s, "acme", "a", "acme's")
	require.Empty(t, comments(t, s, "other", "a", 0, 10), "the same id in another tenant has none")

	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		n, err := tx.NodeGet("acme", "a")
		if err != nil {
			return err
		}
		return tx.NodeDelete(n, "head")
	}))
	clk.Advance(time.Millisecond)
	insert(t, s, newNode("acme", "a", 0))
	require.Empty(t, comments(t, s, "acme", "a", 0, 10), "a node re-created under the id starts with no comments")
	comment(t, s, "acme", "a", "new")
	got := comments(t, s, "acme", "a", 0, 10)
	require.Len(t, got, 1)
	require.Equal(t, "new", got[0].Body)
}
