package cluster

import (
	"log/slog"

	"github.com/tether-run/tether/internal/kv"
)

// openStore opens the shard's rows of kv; every write transaction checks
// first that the owner row still names this term. Its commits go through
// the server's batcher, with the other shards' that fall together.
func (t *postgresTerm) openStore(log *slog.Logger, onDeposed func()) (*kv.Store, error) {
	return kv.OpenPostgres(kv.PostgresOptions{
		Pool: t.c.pool, Schema: t.c.cfg.Schema, Shard: t.k,
		Guard:     &kv.PostgresGuard{Owner: t.owner, Epoch: t.epoch},
		OnDeposed: onDeposed,
		Batcher:   t.c.batcher,
		Logger:    log,
	})
}
