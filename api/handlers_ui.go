package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/ui"
)

// dashboardRoutes serves the operator dashboard (package ui) at /ui/: static
// files that hold no data, so no authentication; the page calls /v1 with the
// token the operator gives it. A file that is not there is a not_found
// problem like any other path.
func (s *Server) dashboardRoutes() {
	files := echo.WrapHandler(ui.Handler())
	s.echo.GET("/ui", func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, ui.Prefix)
	})
	s.echo.GET(ui.Prefix+"*", func(c echo.Context) error {
		if !ui.Has(c.Param("*")) {
			return echo.ErrNotFound
		}
		return files(c)
	})
}
