package sim

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/kv"
)

// The checks catch a lease that ends before the expiry its holder was
// told: a write cuts the first live lease short behind the lease
// service's back, as a wrong expiry rule would.
func TestSimCatchesALeaseEndedEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cut string
		res := Run(Config{Seed: 7, Steps: 150, sabotage: func(r *runner) error {
			if cut != "" {
				return nil
			}
			for _, id := range r.m.ids {
				if r.m.nodes[id].live(time.Now()) == nil {
					continue
				}
				cut = id
				return r.w.store.Update(context.Background(), func(tx *graphstore.Tx) error {
					n, err := tx.NodeGet(tenant, id)
					if err != nil {
						return err
					}
					n.Lease.ExpiresAt = time.Now().UTC()
					return tx.NodePutQuiet(n)
				})
			}
			return nil
		}})
		require.NotEmpty(t, cut, "no lease was live to cut")
		require.ErrorContains(t, res.Err, cut+": ")
		require.ErrorContains(t, res.Err, "was told it holds")
		require.Contains(t, res.Report(7), "seed=7 step=")
	})
}

// The checks catch an acknowledged write that a restart loses: the disk
// is swapped for an empty one, as an engine that forgot its log would.
func TestSimCatchesALostAcknowledgedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		swapped := false
		res := Run(Config{Seed: 11, Steps: 150, sabotage: func(r *runner) error {
			if swapped || r.res.Acked < 5 {
				return nil
			}
			swapped = true
			r.w.close()
			r.w.disk = kv.NewMemDisk()
			return r.w.open(reaperEvery)
		}})
		require.True(t, swapped)
		require.ErrorContains(t, res.Err, "acknowledged")
	})
}
