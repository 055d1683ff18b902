package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/flow"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

type queueJSON struct {
	Queue            string                   `json:"queue"`
	Paused           bool                     `json:"paused"`
	MaxRunning       int64                    `json:"max_running"`
	Counts           map[records.Status]int64 `json:"counts"`
	Ready            int                      `json:"ready"`
	OldestReadyAt    *Time                    `json:"oldest_ready_at"`
	MaxRunningPerKey *int64                   `json:"max_running_per_key,omitempty"`
	Fair             *bool                    `json:"fair,omitempty"`
	AgeEveryMS       *int64                   `json:"age_priority_every_ms,omitempty"`
	Rate             *rateJSON                `json:"rate,omitempty"`
}

// rateJSON is a start rate (flow.Rate) at the HTTP edge.
type rateJSON struct {
	PerSecond float64 `json:"per_second"`
	Burst     int64   `json:"burst"`
}

func (r *rateJSON) rate() *flow.Rate {
	if r == nil {
		return nil
	}
	return &flow.Rate{PerSecond: r.PerSecond, Burst: r.Burst}
}

func toRate(perSecond float64, burst int64) *rateJSON {
	if burst == 0 {
		return nil
	}
	return &rateJSON{PerSecond: perSecond, Burst: burst}
}

func toQueue(v nodes.QueueView) queueJSON {
	counts := map[records.Status]int64{}
	for _, st := range records.Statuses() {
		counts[st] = v.Counts[st]
	}
	q := queueJSON{Queue: v.Queue, Paused: v.Paused, MaxRunning: v.MaxRunning, Counts: counts, Ready: v.Ready, OldestReadyAt: timePtr(v.OldestReady)}
	st := v.Settings
	if st.MaxRunningPerKey != 0 {
		q.MaxRunningPerKey = &st.MaxRunningPerKey
	}
	if st.Fair {
		q.Fair = &st.Fair
	}
	if st.AgeEveryMS != 0 {
		q.AgeEveryMS = &st.AgeEveryMS
	}
	q.Rate = toRate(st.RatePerSecond, st.RateBurst)
	return q
}

func (s *Server) listQueues(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	views, next, err := s.nodes.QueuesPage(principal(c).Tenant, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	items := make([]queueJSON, len(views))
	for i, v := range views {
		items[i] = toQueue(v)
	}
	return writeJSON(c, http.StatusOK, newList(items, next))
}

func (s *Server) setQueue(c echo.Context, ch nodes.QueueChange) error {
	v, err := s.nodes.SetQueue(c.Request().Context(), caller(c), c.Param("queue"), ch)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, toQueue(v))
}

func (s *Server) pauseQueue(c echo.Context) error {
	paused := true
	return s.setQueue(c, nodes.QueueChange{Paused: &paused})
}

func (s *Server) resumeQueue(c echo.Context) error {
	paused := false
	return s.setQueue(c, nodes.QueueChange{Paused: &paused})
}

func (s *Server) patchQueue(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var b struct {
		MaxRunning       *int64    `json:"max_running"`
		MaxRunningPerKey *int64    `json:"max_running_per_key"`
		Fair             *bool     `json:"fair"`
		AgeEveryMS       *int64    `json:"age_priority_every_ms"`
		Rate             *rateJSON `json:"rate"`
	}
	if err := decodeStrict(body, &b, false); err != nil {
		return err
	}
	ch := nodes.QueueChange{MaxRunning: b.MaxRunning, MaxRunningPerKey: b.MaxRunningPerKey, Fair: b.Fair, AgeEveryMS: b.AgeEveryMS}
	// rate is a merge-patch member: null removes the rate, absence keeps it.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return fault.Invalidf("", "the body must be a JSON object")
	}
	for k, v := range members {
		if k != "rate" && string(v) == "null" {
			return fault.Invalidf(k, "cannot be null (0 or false turns it off)")
		}
	}
	_, ch.SetRate = members["rate"]
	ch.Rate = b.Rate.rate()
	return s.setQueue(c, ch)
}

// claimFields are the members of a claim-next body; a complete's next
// carries them too.
type claimFields struct {
	Session string   `json:"session"`
	TTLMS   *int64   `json:"ttl_ms"`
	WaitMS  *int64   `json:"wait_ms"`
	Types   []string `json:"types"`
	Labels  []string `json:"labels"`
}

// params are the params of a claim of one node from queue.
func (b claimFields) params(who nodes.Caller, queue string, waitEnd <-chan struct{}) nodes.ClaimNextParams {
	return nodes.ClaimNextParams{
		Caller: who, Queue: queue, Session: b.Session, TTL: msOf(b.TTLMS), Wait: msOf(b.WaitMS),
		WaitEnd: waitEnd, Types: b.Types, Labels: b.Labels, Max: 1,
	}
}

type claimNextBody struct {
	claimFields
	Max *int `json:"max"`
}

func (s *Server) claimNextParams(c echo.Context, many bool) (nodes.ClaimNextParams, error) {
	body, err := s.readBody(c)
	if err != nil {
		return nodes.ClaimNextParams{}, err
	}
	var b claimNextBody
	if err := decodeStrict(body, &b, true); err != nil {
		return nodes.ClaimNextParams{}, err
	}
	p := b.params(caller(c), c.Param("queue"), s.stopped())
	switch {
	case b.Max != nil && !many:
		return p, fault.Invalidf("max", "unknown field: use POST /v1/queues/{queue}/claims to claim many")
	case b.Max != nil && (*b.Max < 1 || *b.Max > 1000):
		return p, fault.Invalidf("max", "must be an integer from 1 to 1000")
	case b.Max != nil:
		p.Max = *b.Max
	}
	if c.Request().Header.Get("Idempotency-Key") == "" {
		return p, nil // the common case: no digest to take
	}
	op := "claimNext"
	if many {
		op = "claimNextMany"
	}
	// The caller and the queue are part of the request: the same key from
	// another identity, or on another queue, is another request.
	p.Idem, err = idempotency(c, op+"\n"+p.Sub+"\n"+p.Queue, b)
	return p, err
}

// claimNext is POST /v1/queues/{queue}/claim: 200 with a claim, or 204 when
// nothing became ready within wait_ms.
func (s *Server) claimNext(c echo.Context) error {
	p, err := s.claimNextParams(c, false)
	if err != nil {
		return err
	}
	if p.Wait > 0 {
		release, err := s.waiters.acquire(principal(c))
		if err != nil {
			return err
		}
		defer release()
	}
	got, throttled, err := s.nodes.ClaimNextThrottled(c.Request().Context(), p)
	if err != nil {
		return err
	}
	if len(got) == 0 {
		return noContentThrottled(c, throttled)
	}
	out, err := s.claimJSON(got[0])
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, out)
}

// claimMany is POST /v1/queues/{queue}/claims: up to max claims at once.
func (s *Server) claimMany(c echo.Context) error {
	p, err := s.claimNextParams(c, true)
	if err != nil {
		return err
	}
	if p.Wait > 0 {
		release, err := s.waiters.acquire(principal(c))
		if err != nil {
			return err
		}
		defer release()
	}
	got, throttled, err := s.nodes.ClaimNextThrottled(c.Request().Context(), p)
	if err != nil {
		return err
	}
	if len(got) == 0 && throttled != nil {
		return noContentThrottled(c, throttled)
	}
	nodes := make([]*records.Node, len(got))
	for i, r := range got {
		nodes[i] = r.Node
	}
	views, err := s.nodes.Views(nodes...)
	if err != nil {
		return err
	}
	items := make([]claimedJSON, len(got))
	for i, r := range got {
		items[i] = claimedJSON{Lease: toLease(r.Node.ID, r.Lease), Node: toNode(views[i])}
	}
	return writeJSON(c, http.StatusOK, &claimedList{Items: items})
}
