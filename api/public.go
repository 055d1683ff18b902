package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	tether "github.com/tether-run/tether"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/version"
)

// OpenAPI returns the embedded spec (package api).
func OpenAPI() []byte { return tether.OpenAPI }

// SkillMD returns the built-in /skill.md guide (package api).
func SkillMD() []byte { return Skill }

// statusJSON is the answer of the probes.
type statusJSON struct {
	Status string `json:"status"`
}

// healthJSON is the answer of /health: up, and which build.
type healthJSON struct {
	Status   string `json:"status"`
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// newHealthJSON is the answer of /health for this build.
func newHealthJSON() healthJSON {
	b := version.Get()
	return healthJSON{Status: "ok", Version: b.Version, Commit: b.Commit, Modified: b.Modified}
}

func (s *Server) health(c echo.Context) error {
	return writeJSON(c, http.StatusOK, newHealthJSON())
}

func (s *Server) readiness(c echo.Context) error {
	if !s.isReady() {
		return fault.ErrUnavailable
	}
	if err := s.store.Full(); err != nil {
		// Reads are still served, but a balancer should send writes
		// elsewhere: the problem says why (disk_full).
		return err
	}
	return writeJSON(c, http.StatusOK, statusJSON{Status: "ready"})
}

// isReady is what /ready answers (and tether_ready reports): serving, and
// the store healthy.
func (s *Server) isReady() bool { return s.ready.Load() && s.store.Healthy() }

func (s *Server) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", tether.OpenAPI)
}

func (s *Server) skill(c echo.Context) error {
	body := s.cfg.SkillMD
	if len(body) == 0 {
		body = Skill
	}
	return c.Blob(http.StatusOK, "text/markdown; charset=utf-8", body)
}
