package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/flow"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/nodes"
)

// Flow control at the HTTP edge: /v1/limits, /v1/budgets, and the headers
// of a claim-next that flow control held back.

type limitJSON struct {
	Key         string    `json:"key"`
	MaxRunning  *int64    `json:"max_running"`
	Rate        *rateJSON `json:"rate"`
	Running     int64     `json:"running"`
	RunningKeys *int64    `json:"running_keys,omitempty"`
}

func toLimit(v graphstore.LimitView) limitJSON {
	out := limitJSON{Key: v.Key, Rate: toRate(v.Limit.RatePerSecond, v.Limit.RateBurst), Running: v.Running}
	if v.Limit.MaxRunning > 0 {
		out.MaxRunning = &v.Limit.MaxRunning
	}
	if flow.IsPrefix(v.Key) {
		out.RunningKeys = &v.RunningKeys
	}
	return out
}

type budgetJSON struct {
	Key         string  `json:"key"`
	Usage       string  `json:"usage"`
	Limit       float64 `json:"limit"`
	WindowMS    int64   `json:"window_ms"`
	Spent       float64 `json:"spent"`
	WindowStart Time    `json:"window_start"`
	WindowEnd   Time    `json:"window_end"`
	Exhausted   bool    `json:"exhausted"`
}

func toBudget(v graphstore.BudgetView, now time.Time) budgetJSON {
	b := v.Budget
	start, end := flow.Window(b.WindowMS, now)
	spent := 0.0
	if b.WindowStart == start.UnixMilli() {
		spent = b.Spent
	}
	return budgetJSON{Key: v.Key, Usage: b.Usage, Limit: b.Limit, WindowMS: b.WindowMS, Spent: spent,
		WindowStart: Time(start), WindowEnd: Time(end), Exhausted: spent >= b.Limit}
}

// flowKeyParam is the :key path parameter, one path segment unescaped.
func flowKeyParam(c echo.Context) (string, error) {
	k, err := url.PathUnescape(c.Param("key"))
	if err != nil {
		return "", fault.Invalidf("key", "is not a valid path segment")
	}
	return k, nil
}

func (s *Server) listLimits(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	views, next, err := s.nodes.LimitsPage(principal(c).Tenant, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	items := make([]limitJSON, len(views))
	for i, v := range views {
		items[i] = toLimit(v)
	}
	return writeJSON(c, http.StatusOK, newList(items, next))
}

func (s *Server) putLimit(c echo.Context) error {
	key, err := flowKeyParam(c)
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var b struct {
		MaxRunning *int64    `json:"max_running"`
		Rate       *rateJSON `json:"rate"`
	}
	if err := decodeStrict(body, &b, false); err != nil {
		return err
	}
	v, err := s.nodes.PutLimit(c.Request().Context(), caller(c), key, nodes.LimitChange{MaxRunning: b.MaxRunning, Rate: b.Rate.rate()})
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, toLimit(v))
}

func (s *Server) deleteLimit(c echo.Context) error {
	key, err := flowKeyParam(c)
	if err != nil {
		return err
	}
	if err := s.nodes.DeleteLimit(c.Request().Context(), caller(c), key); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listBudgets(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	views, next, err := s.nodes.BudgetsPage(principal(c).Tenant, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	items := make([]budgetJSON, len(views))
	for i, v := range views {
		items[i] = toBudget(v, now)
	}
	return writeJSON(c, http.StatusOK, newList(items, next))
}

func (s *Server) putBudget(c echo.Context) error {
	key, err := flowKeyParam(c)
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var b struct {
		Usage    *string  `json:"usage"`
		Limit    *float64 `json:"limit"`
		WindowMS *int64   `json:"window_ms"`
	}
	if err := decodeStrict(body, &b, false); err != nil {
		return err
	}
	switch {
	case b.Usage == nil:
		return fault.Invalidf("usage", "is required")
	case b.Limit == nil:
		return fault.Invalidf("limit", "is required")
	case b.WindowMS == nil:
		return fault.Invalidf("window_ms", "is required")
	}
	v, err := s.nodes.PutBudget(c.Request().Context(), caller(c), key, nodes.BudgetChange{Usage: *b.Usage, Limit: *b.Limit, WindowMS: *b.WindowMS})
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, toBudget(v, s.clock.Now()))
}

func (s *Server) deleteBudget(c echo.Context) error {
	key, err := flowKeyParam(c)
	if err != nil {
		return err
	}
	if err := s.nodes.DeleteBudget(c.Request().Context(), caller(c), key); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// retryAfterMS is a retry-after in whole milliseconds, rounded up.
func retryAfterMS(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// noContentThrottled answers 204, with the throttle headers when flow
// control held the claims back: Retry-After (seconds, rounded up),
// Tether-Retry-After-Ms and Tether-Throttled: <reason>; key="<key>".
func noContentThrottled(c echo.Context, t *fault.Throttled) error {
	if t != nil {
		h := c.Response().Header()
		ms := retryAfterMS(t.RetryAfter)
		if t.RetryAfter <= 0 {
			// A slot frees when a run ends, which no clock tells: a second
			// is the hint.
			ms = 1000
		}
		h.Set("Retry-After", strconv.FormatInt((ms+999)/1000, 10))
		h.Set("Tether-Retry-After-Ms", strconv.FormatInt(ms, 10))
		h.Set("Tether-Throttled", fmt.Sprintf(`%s; key="%s"`, t.Reason, quoteHeader(t.Key)))
	}
	return c.NoContent(http.StatusNoContent)
}

// quoteHeader escapes \ and " for a quoted-string, and any byte a header
// value may not hold as %XX (a key may hold any UTF-8 but controls).
func quoteHeader(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\\' || ch == '"':
			b.WriteByte('\\')
			b.WriteByte(ch)
		case ch >= 0x80:
			fmt.Fprintf(&b, "%%%02X", ch)
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}
