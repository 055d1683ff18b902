package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/nodes"
)

// tenant is the one tenant the simulation's nodes live in.
const tenant = "sim"

// Lease TTLs: the tenant default, and the most a claim may ask.
const (
	ttlDefault = 30 * time.Second
	ttlMax     = 2 * time.Minute
)

// listSyncEvery is how often the graph's list indexes catch up: nothing
// the simulation checks reads them, and at indexes' 50 ms their loop's
// wake-ups took half the run's time.
const listSyncEvery = 10 * time.Second

// world is the system under test on one disk: the graph store over the
// in-memory engine, the lease service with its reaper, and the node
// service, opened as internal/core opens them, on the bubble's clock.
type world struct {
	disk   *kv.MemDisk
	store  *graphstore.Store
	leases *leasing.Service
	nodes  *nodes.Service
}

func limits(context.Context, string) (leasing.Limits, error) {
	return leasing.Limits{TTLDefault: ttlDefault, TTLMax: ttlMax}, nil
}

// open opens the layers on what the disk holds: the graph rebuilds its
// derived state from the records, the lease service its deadline heap,
// giving every lease a lost renewal may have touched its TTL afresh.
func (w *world) open(reaperEvery time.Duration) error {
	db := kv.OpenMem(w.disk, kv.MemOptions{})
	store, err := graphstore.Open(graphstore.Options{KV: db, Clock: clock.Real{}, ListSyncEvery: listSyncEvery})
	if err != nil {
		return fmt.Errorf("error opening the graph: %w", err)
	}
	leases := leasing.New(leasing.Config{Store: store, Clock: clock.Real{}, Limits: limits, ReaperInterval: reaperEvery})
	if err := leases.Start(context.Background()); err != nil {
		store.Close()
		return fmt.Errorf("error starting the lease service: %w", err)
	}
	w.store, w.leases = store, leases
	w.nodes = nodes.New(nodes.Config{Store: store, Leases: leases, Limits: limits,
		Defaults: func(context.Context, string) (nodes.Defaults, error) { return nodes.Defaults{MaxAttempts: 3}, nil }})
	return nil
}

// close stops the reaper and closes the store (which waits out the syncs
// in flight); after a crash or a failed write its writes fail, which is
// what a dead process's would do.
func (w *world) close() {
	if w.store == nil {
		return
	}
	w.leases.Stop()
	w.store.Close()
	w.store, w.leases, w.nodes = nil, nil, nil
}
