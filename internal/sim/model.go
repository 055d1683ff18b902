package sim

import (
	"time"
)

// model is what the simulation's clients were told: every answer the
// system gave, and nothing it did not. The invariants (check.go) hold the
// system to it.
type model struct {
	nodes map[string]*nodeModel
	ids   []string // nodes in creation order: steps pick from them, never from the map
}

// nodeModel is what was told about one node.
type nodeModel struct {
	id          string
	created     bool   // a create was acknowledged
	maybe       bool   // a create was not answered: the node may exist
	maxAttempts int64  // as created
	done        bool   // a complete was acknowledged
	fence       uint64 // the highest fence granted in an acknowledged claim
	seenFence   uint64 // the highest LastFence read from the store
	grants      int64  // acknowledged new leases
	releases    int64  // releases that may have given an attempt back, answered or not
	lease       *grant // the lease its holder was last told it holds
}

// grant is a lease as its holder was told it: the holder may act on it,
// and nothing may take it, until expires.
type grant struct {
	holder  string
	fence   uint64
	expires time.Time
}

func newModel() *model { return &model{nodes: map[string]*nodeModel{}} }

// live is the node's told lease when its holder may still rely on it at
// now; nil otherwise.
func (n *nodeModel) live(now time.Time) *grant {
	if n.lease != nil && now.Before(n.lease.expires) {
		return n.lease
	}
	return nil
}
