package nodes

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/flow"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// LimitChange is the body of a limit's PUT: either part, at least one.
type LimitChange struct {
	MaxRunning *int64
	Rate       *flow.Rate
}

// checkLimitKey refuses a key that is not a concurrency key or a prefix.
func checkLimitKey(key string) error {
	if p := flow.KeyProblem(key); p != "" {
		return fault.Invalidf("key", "%s", p)
	}
	return nil
}

// PutLimit sets (replaces) the limit on a concurrency key or prefix.
func (s *Service) PutLimit(ctx context.Context, c Caller, key string, ch LimitChange) (graphstore.LimitView, error) {
	if err := checkLimitKey(key); err != nil {
		return graphstore.LimitView{}, err
	}
	if ch.MaxRunning == nil && ch.Rate == nil {
		return graphstore.LimitView{}, fault.Invalidf("max_running", "max_running or rate is required")
	}
	var l records.LimitRecord
	if ch.MaxRunning != nil {
		if err := flow.CheckLimit("max_running", *ch.MaxRunning); err != nil {
			return graphstore.LimitView{}, err
		}
		l.MaxRunning = *ch.MaxRunning
	}
	if ch.Rate != nil {
		if err := ch.Rate.Check("rate"); err != nil {
			return graphstore.LimitView{}, err
		}
		l.RatePerSecond, l.RateBurst = ch.Rate.PerSecond, ch.Rate.Burst
	}
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error { return tx.LimitPut(c.Tenant, key, l) })
	if err != nil {
		return graphstore.LimitView{}, fmt.Errorf("error setting limit: %w", err)
	}
	if v, ok := s.store.Limit(c.Tenant, key); ok {
		return v, nil
	}
	return graphstore.LimitView{Key: key, Limit: l}, nil
}

// DeleteLimit removes a key's limit.
func (s *Service) DeleteLimit(ctx context.Context, c Caller, key string) error {
	if err := checkLimitKey(key); err != nil {
		return err
	}
	if err := s.store.Update(ctx, func(tx *graphstore.Tx) error { return tx.LimitDelete(c.Tenant, key) }); err != nil {
		return fmt.Errorf("error removing limit: %w", err)
	}
	return nil
}

// LimitsPage is a page of the tenant's limits by key, after cursor.
func (s *Service) LimitsPage(tenant, cursor string, limit int) ([]graphstore.LimitView, string, error) {
	after, err := keyCursor(cursor, "l:")
	if err != nil {
		return nil, "", err
	}
	out, more := s.store.Limits(tenant, after, limit)
	next := ""
	if more {
		next = base64.RawURLEncoding.EncodeToString([]byte("l:" + out[len(out)-1].Key))
	}
	return out, next, nil
}

func keyCursor(cursor, tag string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	key, ok := strings.CutPrefix(string(raw), tag)
	if err != nil || !ok {
		return "", fault.Invalidf("cursor", "not a cursor of this list")
	}
	return key, nil
}

// BudgetChange is the body of a budget's PUT.
type BudgetChange struct {
	Usage    string
	Limit    float64
	WindowMS int64
}

// PutBudget sets (replaces) the usage budget on a concurrency key.
func (s *Service) PutBudget(ctx context.Context, c Caller, key string, ch BudgetChange) (graphstore.BudgetView, error) {
	if err := checkLimitKey(key); err != nil {
		return graphstore.BudgetView{}, err
	}
	if flow.IsPrefix(key) {
		return graphstore.BudgetView{}, fault.Invalidf("key", "a budget is on one key, not a prefix")
	}
	if err := flow.CheckBudget(ch.Usage, ch.Limit, ch.WindowMS); err != nil {
		return graphstore.BudgetView{}, err
	}
	var b records.BudgetRecord
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		var err error
		b, err = tx.BudgetPut(c.Tenant, key, ch.Usage, ch.Limit, ch.WindowMS)
		return err
	})
	if err != nil {
		return graphstore.BudgetView{}, fmt.Errorf("error setting budget: %w", err)
	}
	return graphstore.BudgetView{Key: key, Budget: b}, nil
}

// DeleteBudget removes a key's budget.
func (s *Service) DeleteBudget(ctx context.Context, c Caller, key string) error {
	if err := checkLimitKey(key); err != nil {
		return err
	}
	if err := s.store.Update(ctx, func(tx *graphstore.Tx) error { return tx.BudgetDelete(c.Tenant, key) }); err != nil {
		return fmt.Errorf("error removing budget: %w", err)
	}
	return nil
}

// BudgetsPage is a page of the tenant's budgets by key, after cursor.
func (s *Service) BudgetsPage(tenant, cursor string, limit int) ([]graphstore.BudgetView, string, error) {
	after, err := keyCursor(cursor, "b:")
	if err != nil {
		return nil, "", err
	}
	out, more := s.store.Budgets(tenant, after, limit)
	next := ""
	if more {
		next = base64.RawURLEncoding.EncodeToString([]byte("b:" + out[len(out)-1].Key))
	}
	return out, next, nil
}
