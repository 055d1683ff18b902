package intake

import (
	"context"
	"encoding/json"
	"strconv"
)

// Creator makes the node one intake row describes, in the row's tenant,
// under idempotencyKey: a second call with the same key and node answers
// the node the first one made and makes none. An error that means the row
// itself can never succeed is a *Rejected; any other error is taken as
// passing (the server restarting, a shard moving) and the row is tried
// again later.
type Creator interface {
	Create(ctx context.Context, tenant string, node json.RawMessage, idempotencyKey string) (id string, err error)
}

// Rejected is a Creator's answer that the row can never make a node: its
// node is invalid, too large, names a parent that does not exist, or
// conflicts with a node already there. The consumer moves such a row to
// intake_failed with Reason.
type Rejected struct {
	// Status is the HTTP status the create was answered with (400, 404,
	// 409, 413, 422), or 0 when the row was refused before any request.
	Status int
	// Reason is the answer's problem detail, for an operator to read.
	Reason string
}

func (e *Rejected) Error() string { return "the node was rejected: " + e.Reason }

// keyOf is the Idempotency-Key of the intake row id: the same on every
// attempt, so a row taken again after a crash answers the node made first.
func keyOf(id int64) string { return "intake-" + strconv.FormatInt(id, 10) }
