package graphstore

import "github.com/tether-run/tether/internal/records"

// CommentInsert stores c on node n (the stored record) and appends its
// commented event, whose data names the comment. It sets c.NodeID, c.Seq and
// c.CreatedAt; the caller fills ID, By and Body.
func (tx *Tx) CommentInsert(n *records.Node, c *records.Comment) error {
	seq, err := tx.nextSeq(n.Tenant)
	if err != nil {
		return err
	}
	c.NodeID, c.Seq, c.CreatedAt = n.ID, seq, tx.now.UTC()
	if err := tx.setRecord(records.CommentKey(n.Tenant, n.ID, n.CreatedAt.UnixNano(), seq), c); err != nil {
		return err
	}
	return tx.emitWithSeq(n.Tenant, seq, records.EventCommented, n.ID, c.By, records.Data().Str("comment_id", c.ID).Done())
}

// CommentList returns up to limit comments of node n (the stored record) with
// Seq > after, oldest first.
func (tx *Tx) CommentList(n *records.Node, after uint64, limit int) ([]*records.Comment, error) {
	if limit <= 0 {
		return nil, nil
	}
	created := n.CreatedAt.UnixNano()
	prefix := records.NewKey(records.TagComment, n.Tenant).Str(n.ID).U64(uint64(created)).Bytes()
	var start []byte
	if after > 0 {
		start = records.CommentKey(n.Tenant, n.ID, created, after)
	}
	var out []*records.Comment
	err := tx.kv.Scan(prefix, start, false, true, func(key, val []byte) (bool, error) {
		var c records.Comment
		if err := decode(val, &c, key); err != nil {
			return false, err
		}
		out = append(out, &c)
		return len(out) < limit, nil
	})
	return out, err
}
