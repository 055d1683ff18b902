package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/schedule"
	"github.com/tether-run/tether/internal/tenancy"
)

// scheduleRoutes registers the schedules: reading them is a reader's, every
// change a dispatcher's.
func (s *Server) scheduleRoutes(v1 v1Router) {
	reader, dispatcher := tenancy.RoleReader, tenancy.RoleDispatcher
	v1.add(http.MethodPost, "/schedules", s.createSchedule, dispatcher)
	v1.add(http.MethodGet, "/schedules", s.listSchedules, reader)
	v1.add(http.MethodGet, "/schedules/:id", s.getSchedule, reader)
	v1.add(http.MethodPatch, "/schedules/:id", s.patchSchedule, dispatcher)
	v1.add(http.MethodDelete, "/schedules/:id", s.deleteSchedule, dispatcher)
	v1.add(http.MethodPost, "/schedules/:id/pause", s.pauseSchedule, dispatcher)
	v1.add(http.MethodPost, "/schedules/:id/resume", s.resumeSchedule, dispatcher)
	v1.add(http.MethodPost, "/schedules/:id/trigger", s.triggerSchedule, dispatcher)
	v1.add(http.MethodGet, "/schedules/:id/runs", s.listScheduleRuns, reader)
}

type scheduleJSON struct {
	ID              string           `json:"id"`
	Cron            *string          `json:"cron"`
	At              *Time            `json:"at"`
	Timezone        string           `json:"timezone"`
	Template        nodes.NodeSpec   `json:"template"`
	Chain           []nodes.NodeSpec `json:"chain"`
	Overlap         schedule.Overlap `json:"overlap"`
	Catchup         schedule.Catchup `json:"catchup"`
	CatchupWindowMS int64            `json:"catchup_window_ms"`
	JitterMS        int64            `json:"jitter_ms"`
	BackoffMS       []int64          `json:"backoff_ms"`
	Enabled         bool             `json:"enabled"`
	Note            *string          `json:"note"`
	PausedAt        *Time            `json:"paused_at"`
	PausedBy        *string          `json:"paused_by"`
	NextFireAt      *Time            `json:"next_fire_at"`
	NextFires       []Time           `json:"next_fires"`
	Failures        int64            `json:"consecutive_failures"`
	BackoffUntil    *Time            `json:"backoff_until"`
	LastRunSeq      *uint64          `json:"last_run_seq"`
	Version         int64            `json:"version"`
	CreatedBy       string           `json:"created_by"`
	CreatedAt       Time             `json:"created_at"`
	UpdatedAt       Time             `json:"updated_at"`
}

func toSchedule(v schedule.View) scheduleJSON {
	out := scheduleJSON{
		ID: v.ID, Cron: strPtr(v.Cron), At: timePtr(v.At), Timezone: v.Timezone,
		Template: v.Template, Chain: v.Chain, Overlap: v.Overlap, Catchup: v.Catchup,
		CatchupWindowMS: v.CatchupWindowMS, JitterMS: v.JitterMS, BackoffMS: v.BackoffMS,
		Enabled: v.Enabled, Note: strPtr(v.Note), PausedAt: timePtr(v.PausedAt), PausedBy: strPtr(v.PausedBy),
		NextFires: make([]Time, len(v.NextFires)), Failures: v.Failures, BackoffUntil: timePtr(v.BackoffUntil),
		Version: v.Version, CreatedBy: v.CreatedBy, CreatedAt: Time(v.CreatedAt), UpdatedAt: Time(v.UpdatedAt),
	}
	for i, t := range v.NextFires {
		out.NextFires[i] = Time(t)
	}
	if len(v.NextFires) > 0 {
		out.NextFireAt = &out.NextFires[0]
	}
	if out.Chain == nil {
		out.Chain = []nodes.NodeSpec{}
	}
	if out.BackoffMS == nil {
		out.BackoffMS = []int64{}
	}
	if v.LastSeq > 0 {
		seq := v.LastSeq
		out.LastRunSeq = &seq
	}
	return out
}

type runJSON struct {
	Seq             uint64             `json:"seq"`
	ScheduleID      string             `json:"schedule_id"`
	Trigger         schedule.Trigger   `json:"trigger"`
	By              *string            `json:"by"`
	Status          schedule.RunStatus `json:"status"`
	SkipReason      *string            `json:"skip_reason"`
	SkippedFires    int64              `json:"skipped_fires"`
	CoalescedFires  int64              `json:"coalesced_fires"`
	ScheduledAt     Time               `json:"scheduled_at"`
	LastScheduledAt *Time              `json:"last_scheduled_at"`
	FiredAt         Time               `json:"fired_at"`
	NodeID          *string            `json:"node_id"`
	Nodes           []string           `json:"nodes"`
	After           []string           `json:"after"`
	Cancelled       []string           `json:"cancelled"`
	Attempts        int64              `json:"attempts"`
	EndedAt         *Time              `json:"ended_at"`
	DurationMS      *int64             `json:"duration_ms"`
	Error           *string            `json:"error"`
	Result          json.RawMessage    `json:"result"`
}

func toRun(v schedule.RunView) runJSON {
	out := runJSON{
		Seq: v.Seq, ScheduleID: v.ScheduleID, Trigger: v.Trigger, By: strPtr(v.By), Status: v.Status,
		SkipReason: strPtr(string(v.Skipped)), SkippedFires: v.Count, CoalescedFires: v.Coalesced,
		ScheduledAt: Time(v.ScheduledAt), LastScheduledAt: timePtr(v.LastScheduledAt), FiredAt: Time(v.FiredAt),
		Nodes: nonNil(v.Nodes), After: nonNil(v.After), Cancelled: nonNil(v.Cancelled),
		Attempts: v.Attempts, EndedAt: timePtr(v.EndedAt), Error: v.Error, Result: v.Result,
	}
	if len(v.Nodes) > 0 {
		out.NodeID = &v.Nodes[0]
	}
	if v.Duration != nil {
		d := v.Duration.Milliseconds()
		out.DurationMS = &d
	}
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func scheduleID(c echo.Context) (string, error) {
	id := c.Param("id")
	if !schedule.ValidID(id) {
		return "", fault.Invalidf("id", "is not a valid schedule id")
	}
	return id, nil
}

// createSchedule is POST /v1/schedules: 201 with the schedule.
func (s *Server) createSchedule(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var st schedule.Settings
	if err := decodeStrict(body, &st, false); err != nil {
		return err
	}
	p := principal(c)
	v, err := s.schedules.Create(c.Request().Context(), p.Tenant, p.Subject, st)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, toSchedule(v))
}

// listSchedules is GET /v1/schedules.
func (s *Server) listSchedules(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	views, next, err := s.schedules.List(principal(c).Tenant, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	items := make([]scheduleJSON, len(views))
	for i, v := range views {
		items[i] = toSchedule(v)
	}
	return writeJSON(c, http.StatusOK, newList(items, next))
}

// getSchedule is GET /v1/schedules/{id}.
func (s *Server) getSchedule(c echo.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	v, err := s.schedules.Get(principal(c).Tenant, id)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, toSchedule(v))
}

// patchSchedule is PATCH /v1/schedules/{id}: a JSON merge patch.
func (s *Server) patchSchedule(c echo.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	patch, err := schedule.DecodePatch(body)
	if err != nil {
		return err
	}
	p := principal(c)
	v, err := s.schedules.Update(c.Request().Context(), p.Tenant, id, p.Subject, patch)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, toSchedule(v))
}

// deleteSchedule is DELETE /v1/schedules/{id}: 204.
func (s *Server) deleteSchedule(c echo.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	if err := s.schedules.Delete(c.Request().Context(), principal(c).Tenant, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) pauseSchedule(c echo.Context) error  { return s.setScheduleEnabled(c, false) }
func (s *Server) resumeSchedule(c echo.Context) error { return s.setScheduleEnabled(c, true) }

// setScheduleEnabled is POST /v1/schedules/{id}/pause and /resume, with an
// optional {"note"}.
func (s *Server) setScheduleEnabled(c echo.Context, enabled bool) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var b struct {
		Note string `json:"note"`
	}
	if err := decodeStrict(body, &b, true); err != nil {
		return err
	}
	p := principal(c)
	v, err := s.schedules.SetEnabled(c.Request().Context(), p.Tenant, id, p.Subject, enabled, b.Note)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, toSchedule(v))
}

// triggerSchedule is POST /v1/schedules/{id}/trigger: 201 with the run.
func (s *Server) triggerSchedule(c echo.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var b struct {
		Overlap *schedule.Overlap `json:"overlap"`
	}
	if err := decodeStrict(body, &b, true); err != nil {
		return err
	}
	p := principal(c)
	v, err := s.schedules.Trigger(c.Request().Context(), p.Tenant, id, p.Subject, b.Overlap)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, toRun(v))
}

// listScheduleRuns is GET /v1/schedules/{id}/runs, newest first.
func (s *Server) listScheduleRuns(c echo.Context) error {
	id, err := scheduleID(c)
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	views, next, err := s.schedules.Runs(principal(c).Tenant, id, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	items := make([]runJSON, len(views))
	for i, v := range views {
		items[i] = toRun(v)
	}
	return writeJSON(c, http.StatusOK, newList(items, next))
}
