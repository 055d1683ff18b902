package lifecycle

import (
	"github.com/tether-run/tether/internal/records"
)

// Create gives a node about to be stored for the first time its status: at
// rest, queued in its queue or open without one.
func Create(n *records.Node) error {
	if err := check(OpCreate, n, n.RestStatus()); err != nil {
		return err
	}
	n.Status = n.RestStatus()
	return nil
}

// MoveQueue sets n's queue. A node at rest follows it (queued in a queue,
// open without one); a running or finished node keeps its status. It is
// legal from every status, so it is no Op.
func MoveQueue(n *records.Node, queue string) {
	n.Queue = queue
	if n.Status.AtRest() {
		n.Status = n.RestStatus()
	}
}
