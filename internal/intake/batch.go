package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/tether-run/tether/internal/tenancy"
)

// commitTimeout bounds the finishing statement and commit of a batch whose
// creates ran; they go on after Stop, so the work done is not thrown away.
const commitTimeout = 10 * time.Second

// maxErrorLength bounds the error kept with a failed row.
const maxErrorLength = 2000

// row is one intake row taken.
type row struct {
	id     int64
	tenant string
	node   json.RawMessage
}

// result is what became of one row.
type result struct {
	done     bool      // made (or found made): delete the row
	rejected *Rejected // refused for good: move it to intake_failed
	err      error     // passing: leave it for a later batch
}

// batch takes up to BatchSize committed rows, makes their nodes and
// removes the rows, in one transaction. It returns how many rows it took,
// and an error when any row's node could not be made for a passing reason
// (those rows stay) or the database failed (the whole batch stays).
//
// Exactly once: a row is taken only once committed, and deleted in the
// transaction that took it, after its node was made under the row's own
// Idempotency-Key. If that transaction never commits (a crash, a lost
// connection), the row is taken again and the key answers the node made
// the first time, so no row ever makes two.
func (c *Consumer) batch(ctx context.Context) (int, error) {
	tx, err := c.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("error beginning an intake batch: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	rows, err := c.take(ctx, tx)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	results := c.createAll(ctx, rows)
	if c.beforeCommit != nil {
		if err := c.beforeCommit(ctx); err != nil {
			return len(rows), err
		}
	}
	var out Outcome
	var gone, failedIDs []int64
	var statuses []int32
	var reasons []string
	var passing error
	for i, r := range results {
		id := rows[i].id
		switch {
		case r.done:
			out.Created = append(out.Created, id)
			gone = append(gone, id)
		case r.rejected != nil:
			out.Failed = append(out.Failed, id)
			gone = append(gone, id)
			failedIDs = append(failedIDs, id)
			statuses = append(statuses, int32(r.rejected.Status))
			reasons = append(reasons, truncate(r.rejected.Reason, maxErrorLength))
		default:
			out.Deferred++
			if passing == nil {
				passing = fmt.Errorf("error making the node of intake row %d: %w", id, r.err)
			}
		}
	}
	fin, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if len(gone) > 0 {
		if _, err := tx.Exec(fin, c.sql.finish, gone, failedIDs, statuses, reasons); err != nil {
			return len(rows), fmt.Errorf("error removing intake rows: %w", err)
		}
	}
	if err := tx.Commit(fin); err != nil {
		return len(rows), fmt.Errorf("error committing an intake batch: %w", err)
	}
	for i, id := range out.Failed {
		c.cfg.Logger.Warn("intake: a row's node was refused; moved to intake_failed", "id", id, "status", statuses[i], "error", reasons[i])
	}
	c.TestSignals.Committed.Signal(out)
	return len(rows), passing
}

// take locks up to BatchSize rows, oldest first.
func (c *Consumer) take(ctx context.Context, tx pgx.Tx) ([]row, error) {
	rs, err := tx.Query(ctx, c.sql.take, c.cfg.BatchSize)
	if err != nil {
		return nil, fmt.Errorf("error taking intake rows: %w", err)
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (row, error) {
		var w row
		var node []byte
		err := r.Scan(&w.id, &w.tenant, &node)
		w.node = node
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading intake rows: %w", err)
	}
	return out, nil
}

// createAll makes the rows' nodes, Concurrency at a time, and says what
// became of each.
func (c *Consumer) createAll(ctx context.Context, rows []row) []result {
	results := make([]result, len(rows))
	sem := make(chan struct{}, c.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, r := range rows {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = c.create(ctx, r)
		})
	}
	wg.Wait()
	return results
}

// create makes one row's node under the row's key.
func (c *Consumer) create(ctx context.Context, r row) result {
	if !tenancy.ValidTenant(r.tenant) { // the table's CHECK holds it; this is the backstop
		return result{rejected: &Rejected{Reason: "tenant: not a valid tenant id"}}
	}
	_, err := c.cfg.Creator.Create(ctx, r.tenant, r.node, keyOf(r.id))
	var rej *Rejected
	switch {
	case err == nil:
		return result{done: true}
	case errors.As(err, &rej):
		return result{rejected: rej}
	default:
		return result{err: err}
	}
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
