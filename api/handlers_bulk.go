package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/nodes"
)

// bulkRequest is the body of POST /v1/nodes/bulk.
type bulkRequest struct {
	Action string     `json:"action"`
	Filter nodeFilter `json:"filter"`
	Limit  *int       `json:"limit"`
	IDs    []string   `json:"ids"`
	DryRun bool       `json:"dry_run"`
	Reason string     `json:"reason"`
	Force  bool       `json:"force"`
}

type bulkFailure struct {
	ID     string `json:"id"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

type bulkAnswer struct {
	Action    string        `json:"action"`
	DryRun    bool          `json:"dry_run"`
	Matched   int           `json:"matched"`
	Truncated bool          `json:"truncated"`
	Selected  []string      `json:"selected"`
	Skipped   []string      `json:"skipped"`
	Affected  []string      `json:"affected"`
	Failed    []bulkFailure `json:"failed"`
}

// bulkNodes applies one action to every node a filter selects (nodes.Bulk)
// and reports each refusal as the problem the node alone would have got.
func (s *Server) bulkNodes(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var b bulkRequest
	if err := decodeStrict(body, &b, false); err != nil {
		return err
	}
	q, ready, err := b.Filter.query()
	if inv, ok := err.(*fault.Invalid); ok {
		return fault.Invalidf("filter."+inv.Field, "%s", inv.Reason)
	}
	if err != nil {
		return err
	}
	limit := nodes.BulkLimitDefault
	if b.Limit != nil {
		if *b.Limit < 1 || *b.Limit > nodes.BulkLimitMax {
			return fault.Invalidf("limit", "must be an integer from 1 to %d", nodes.BulkLimitMax)
		}
		limit = *b.Limit
	}
	res, err := s.nodes.Bulk(c.Request().Context(), caller(c), nodes.BulkParams{
		Action: nodes.BulkAction(b.Action), Query: q, Ready: ready, Limit: limit, IDs: b.IDs,
		DryRun: b.DryRun, Reason: b.Reason, Force: b.Force,
	})
	if err != nil {
		return err
	}
	out := bulkAnswer{
		Action: b.Action, DryRun: b.DryRun, Matched: res.Matched, Truncated: res.Truncated,
		Selected: orEmpty(res.Selected), Skipped: orEmpty(res.Skipped), Affected: orEmpty(res.Affected),
		Failed: make([]bulkFailure, 0, len(res.Failed)),
	}
	for _, f := range res.Failed {
		p, known := problemFor(f.Err)
		if !known {
			s.log.Error("bulk action failed on a node", "action", b.Action, "node", f.ID, "err", f.Err)
		}
		out.Failed = append(out.Failed, bulkFailure{ID: f.ID, Status: p.Status, Code: p.Code, Detail: p.Detail})
	}
	return writeJSON(c, http.StatusOK, out)
}

func orEmpty(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}
