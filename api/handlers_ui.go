package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/ui"
)

// dashboardRoutes serves the operator dashboard (package ui): its page at
// /ui and its files under /ui/, static files that hold no data, so no
// authentication; the page calls /v1 with the token the operator gives it.
// /ui/ redirects to the page. A file that is not there is a not_found
// problem like any other path.
func (s *Server) dashboardRoutes() {
	files := echo.WrapHandler(ui.Handler())
	s.echo.GET(ui.Page, files, noBody)
	s.echo.GET(ui.Prefix+"*", func(c echo.Context) error {
		name := c.Param("*")
		switch {
		case name == "":
			return c.Redirect(http.StatusMovedPermanently, ui.Page)
		case !ui.Has(name):
			return echo.ErrNotFound
		}
		return files(c)
	}, noBody)
}
