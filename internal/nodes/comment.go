package nodes

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// MaxCommentLength bounds a comment body, in characters.
const MaxCommentLength = 65536

// AddComment stores a comment by the caller on node id, with its commented
// event in the same transaction.
func (s *Service) AddComment(ctx context.Context, c Caller, id, body string) (*records.Comment, error) {
	if n := utf8.RuneCountInString(body); n < 1 || n > MaxCommentLength {
		return nil, fault.Invalidf("body", "must be 1-%d characters", MaxCommentLength)
	}
	uid, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	cm := &records.Comment{ID: uid.String(), By: c.Sub, Body: body}
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(c.Tenant, id)
		if err != nil {
			return err
		}
		return tx.CommentInsert(n, cm)
	})
	if err != nil {
		return nil, fmt.Errorf("error adding comment: %w", err)
	}
	return cm, nil
}

// Comments returns one page of the comments of node id, oldest first, and
// the cursor of the next page ("" at the end). A node that does not exist
// (any more) is a fault.NotFound, even though its comments stay stored.
func (s *Service) Comments(tenant, id string, limit int, cursor string) ([]*records.Comment, string, error) {
	var after uint64
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		seq, ok := strings.CutPrefix(string(raw), "c:")
		if err != nil || !ok {
			return nil, "", fault.Invalidf("cursor", "not a cursor of this list")
		}
		if after, err = strconv.ParseUint(seq, 10, 64); err != nil {
			return nil, "", fault.Invalidf("cursor", "not a cursor of this list")
		}
	}
	var out []*records.Comment
	next := ""
	err := s.store.View(func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(tenant, id)
		if err != nil {
			return err
		}
		out, err = tx.CommentList(n, after, limit+1)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if len(out) > limit {
		out = out[:limit]
		next = base64.RawURLEncoding.EncodeToString([]byte("c:" + strconv.FormatUint(out[limit-1].Seq, 10)))
	}
	return out, next, nil
}
