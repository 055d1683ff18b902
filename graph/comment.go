package graph

import (
	"encoding/json"
	"time"
)

// Comment is a note left on a node.
//
// Comments are stored per incarnation of a node id: the key carries the
// node's creation instant, so a node re-created under a deleted node's id
// starts with no comments, and the old ones stay stored but unreachable (the
// deleted node's commented events remain in its history).
type Comment struct {
	ID     string `json:"id"`
	NodeID string `json:"node_id"`
	By     string `json:"by"`
	Body   string `json:"body"`
	// Seq is the seq of the comment's commented event; comments list in its
	// order, which is commit order.
	Seq       uint64    `json:"seq"`
	CreatedAt time.Time `json:"created_at"`
}

// CommentInsert stores c on node n (the stored record) and appends its
// commented event, whose data names the comment. It sets c.NodeID, c.Seq and
// c.CreatedAt; the caller fills ID, By and Body.
func (tx *Tx) CommentInsert(n *Node, c *Comment) error {
	seq, err := tx.nextSeq(n.Tenant)
	if err != nil {
		return err
	}
	c.NodeID, c.Seq, c.CreatedAt = n.ID, seq, tx.now.UTC()
	if err := tx.setJSON(commentKey(n.Tenant, n.ID, n.CreatedAt.UnixNano(), seq), c); err != nil {
		return err
	}
	return tx.emitWithSeq(n.Tenant, seq, EventCommented, n.ID, c.By, map[string]any{"comment_id": c.ID})
}

// CommentList returns up to limit comments of node n (the stored record) with
// Seq > after, oldest first.
func (tx *Tx) CommentList(n *Node, after uint64, limit int) ([]*Comment, error) {
	if limit <= 0 {
		return nil, nil
	}
	created := n.CreatedAt.UnixNano()
	prefix := newKey(tagComment, n.Tenant).str(n.ID).u64(uint64(created)).bytes()
	var start []byte
	if after > 0 {
		start = commentKey(n.Tenant, n.ID, created, after)
	}
	var out []*Comment
	err := tx.scan(prefix, start, false, true, func(_, val []byte) (bool, error) {
		var c Comment
		if err := json.Unmarshal(val, &c); err != nil {
			return false, err
		}
		out = append(out, &c)
		return len(out) < limit, nil
	})
	return out, err
}
