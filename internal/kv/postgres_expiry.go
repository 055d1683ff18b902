package kv

import (
	"time"
)

// postgresCleanBatch bounds the keys one statement of the expiry cleaner
// deletes.
const postgresCleanBatch = 1000

// cleanLoop deletes expired keys from the table, in bounded batches, every
// cleanEvery until done; readers leave expired keys out meanwhile, so this
// only keeps the table from growing. A batch that finds a full batch goes
// on at once. It stops when the store breaks (a deposed owner must not
// touch the shard; its guard would refuse anyway).
func (e *postgresEngine) cleanLoop(done <-chan struct{}) {
	t := time.NewTicker(e.cleanEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		for !e.s.broken.Load() {
			n, err := e.clean(time.Now())
			if err != nil {
				e.log.Warn("error deleting expired keys", "shard", e.shard, "err", err)
				break
			}
			if n < postgresCleanBatch {
				break
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}
}

// clean deletes up to postgresCleanBatch keys expired at now, and returns
// how many it deleted.
func (e *postgresEngine) clean(now time.Time) (int64, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	args := []any{e.shard, now.Unix(), postgresCleanBatch}
	if e.guard != nil {
		args = append(args, e.guard.Owner, e.guard.Epoch)
	}
	tag, err := e.pool.Exec(ctx, e.sql.clean, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
