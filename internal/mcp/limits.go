package mcp

import (
	"context"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/client"
)

// list_limits reads the tenant's flow control: the limits and start rates
// on concurrency keys, with what runs under each now, and the usage budgets
// with what was spent in their current windows. An agent whose claim_next
// came back throttled reads here why, and until when.

type listLimitsIn struct {
	Cursor        string `json:"cursor,omitempty" jsonschema:"Continue the limits from a previous answer's next_cursor."`
	BudgetsCursor string `json:"budgets_cursor,omitempty" jsonschema:"Continue the budgets from a previous answer's budgets_next_cursor."`
}

type rateOut struct {
	PerSecond float64 `json:"per_second" jsonschema:"claims that may start a second"`
	Burst     int64   `json:"burst" jsonschema:"the most that may start at once"`
}

type limitOut struct {
	Key         string   `json:"key" jsonschema:"the concurrency key, or a prefix ending in * (each matching key limited on its own)"`
	MaxRunning  int64    `json:"max_running,omitempty" jsonschema:"at most this many running nodes carrying the key (absent: no limit, only a rate)"`
	Running     int64    `json:"running" jsonschema:"running nodes carrying the key now; for a prefix, those of its busiest matching key"`
	RunningKeys int64    `json:"running_keys,omitempty" jsonschema:"for a prefix: how many matching keys have running nodes"`
	Rate        *rateOut `json:"rate,omitempty" jsonschema:"the key's start rate"`
}

type budgetOut struct {
	Key       string    `json:"key" jsonschema:"the concurrency key whose runs spend it"`
	Usage     string    `json:"usage" jsonschema:"the usage counter it counts (tokens, cost_usd, ...)"`
	Limit     float64   `json:"limit" jsonschema:"the most spent in one window"`
	Spent     float64   `json:"spent" jsonschema:"spent in the current window"`
	WindowEnd time.Time `json:"window_end" jsonschema:"when the current window ends and spending starts again from 0"`
	Exhausted bool      `json:"exhausted" jsonschema:"true when spent reached limit: nodes carrying the key wait until window_end"`
}

type limitsOut struct {
	Limits            []limitOut  `json:"limits" jsonschema:"the limits and start rates, by key"`
	NextCursor        string      `json:"next_cursor,omitempty" jsonschema:"pass as cursor for more limits; absent on the last page"`
	Budgets           []budgetOut `json:"budgets" jsonschema:"the usage budgets, by key"`
	BudgetsNextCursor string      `json:"budgets_next_cursor,omitempty" jsonschema:"pass as budgets_cursor for more budgets; absent on the last page"`
	Next              string      `json:"next" jsonschema:"what to call next"`
}

const nextLimits = "A node waits while any of its concurrency keys is at max_running, out of start rate, or over an exhausted budget: " +
	"call claim_next again after the retry_after_ms it named, or work another queue."

func (s *session) addLimitTools(srv *sdk.Server) {
	tool(srv, def{name: "list_limits", title: "Read limits and budgets",
		desc: "List the tenant's flow control: limits on running nodes and start rates per concurrency key (with how many run now), " +
			"and usage budgets (spent in the current window, when it rolls over, whether exhausted). " +
			"Read it when claim_next answers throttled.",
		hints: readOnly}, s.listLimits)
}

func (s *session) listLimits(ctx context.Context, in listLimitsIn) (*limitsOut, *sdk.CallToolResult) {
	lim, err := s.api.ListLimitsWithResponse(ctx, &client.ListLimitsParams{Cursor: nonEmpty(in.Cursor)})
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(lim.HTTPResponse, lim.Body); bad != nil {
		return nil, bad
	}
	bud, err := s.api.ListBudgetsWithResponse(ctx, &client.ListBudgetsParams{Cursor: nonEmpty(in.BudgetsCursor)})
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(bud.HTTPResponse, bud.Body); bad != nil {
		return nil, bad
	}
	out := &limitsOut{Limits: []limitOut{}, Budgets: []budgetOut{}, Next: nextLimits,
		NextCursor: deref(lim.JSON200.NextCursor), BudgetsNextCursor: deref(bud.JSON200.NextCursor)}
	for _, l := range lim.JSON200.Items {
		o := limitOut{Key: l.Key, MaxRunning: deref(l.MaxRunning), Running: l.Running, RunningKeys: deref(l.RunningKeys)}
		if l.Rate != nil {
			o.Rate = &rateOut{PerSecond: l.Rate.PerSecond, Burst: l.Rate.Burst}
		}
		out.Limits = append(out.Limits, o)
	}
	for _, b := range bud.JSON200.Items {
		out.Budgets = append(out.Budgets, budgetOut{Key: b.Key, Usage: b.Usage, Limit: b.Limit, Spent: b.Spent,
			WindowEnd: b.WindowEnd, Exhausted: b.Exhausted})
	}
	return out, nil
}

// nonEmpty is &v, or nil for "".
func nonEmpty(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}
