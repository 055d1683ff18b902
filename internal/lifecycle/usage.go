package lifecycle

import (
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// AddUsage adds a run's usage to the node's own usage and its total.
func AddUsage(n *records.Node, u map[string]float64) {
	for k, v := range u {
		n.Usage[k] += v
		n.UsageTotal[k] += v
	}
}

// RollUp adds usage to the usage_total of every ancestor of n.
func RollUp(tx *graphstore.Tx, n *records.Node, u map[string]float64) error {
	if len(u) == 0 {
		return nil
	}
	seen := map[string]bool{n.ID: true}
	for id := n.Parent; id != "" && !seen[id]; {
		seen[id] = true
		p, err := tx.NodeGet(n.Tenant, id)
		if _, gone := err.(*fault.NotFound); gone {
			return nil
		}
		if err != nil {
			return err
		}
		for k, v := range u {
			p.UsageTotal[k] += v
		}
		if err := tx.NodePut(p); err != nil {
			return err
		}
		id = p.Parent
	}
	return nil
}
