package cluster

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// watch reads the members and the owners every poll interval and publishes
// them when they changed, until ctx ends. Only live members count (by the
// database's clock), and only an owner that is one: a dead owner's row
// stays until a server takes the shard, but nobody routes to it. The rows
// of members found expired are deleted on the way; nothing depends on it.
func (c *postgresCoordinator) watch(ctx context.Context, publish func(edit func(v *view))) {
	var last *pgSnapshot
	for ctx.Err() == nil {
		snap, err := c.read(ctx)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				c.log.Warn("error reading the cluster's members and owners; retrying", "err", err)
			}
		case last == nil || !snap.equal(last):
			last = snap
			publish(func(v *view) { v.members, v.leaving, v.owners = snap.members, snap.leaving, snap.owners })
		}
		if err == nil && snap.expired > 0 {
			if _, err := c.pool.Exec(ctx, `DELETE FROM `+c.members+` WHERE expires_at <= now()`); err != nil && ctx.Err() == nil {
				c.log.Warn("error deleting expired members", "err", err)
			}
		}
		sleep(ctx, c.poll)
	}
}

// pgSnapshot is one reading of members and shard_owners.
type pgSnapshot struct {
	members map[string]string
	leaving map[string]bool
	owners  []owner
	expired int // member rows past their expiry
}

func (a *pgSnapshot) equal(b *pgSnapshot) bool {
	return maps.Equal(a.members, b.members) && maps.Equal(a.leaving, b.leaving) && slices.Equal(a.owners, b.owners)
}

// read reads the members and the owners in one snapshot, so that the
// owners' liveness agrees with the members.
func (c *postgresCoordinator) read(ctx context.Context) (*pgSnapshot, error) {
	rctx, cancel := context.WithTimeout(ctx, max(c.cfg.LeaseTTL/2, time.Second))
	defer cancel()
	tx, err := c.pool.BeginTx(rctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(rctx) }()
	snap := &pgSnapshot{members: map[string]string{}, leaving: map[string]bool{}, owners: make([]owner, c.cfg.Shards)}
	rows, err := tx.Query(rctx, `SELECT id, url, leaving, expires_at > now() FROM `+c.members)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, url string
		var leaving, live bool
		if err := rows.Scan(&id, &url, &leaving, &live); err != nil {
			rows.Close()
			return nil, err
		}
		if !live {
			snap.expired++
			continue
		}
		snap.members[id] = url
		if leaving {
			snap.leaving[id] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.Query(rctx, `SELECT shard, owner, epoch FROM `+c.owners+` WHERE owner IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k int
		var id string
		var epoch int64
		if err := rows.Scan(&k, &id, &epoch); err != nil {
			rows.Close()
			return nil, err
		}
		if url, live := snap.members[id]; live && k >= 0 && k < c.cfg.Shards {
			snap.owners[k] = owner{id: id, url: url, rev: epoch}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return snap, tx.Commit(rctx)
}
