package cluster

import (
	"errors"
	"log/slog"

	"github.com/tether-run/tether/internal/kv"
)

// openStore opens the shard's rows of kv; every write transaction checks
// first that the owner row still names this term.
func (t *postgresTerm) openStore(log *slog.Logger, onDeposed func()) (*kv.Store, error) {
	return nil, errors.New("the PostgreSQL kv engine is not merged yet")
}
