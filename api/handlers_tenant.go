package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/tenancy"
)

func (s *Server) getTenant(c echo.Context) error {
	t, err := s.tenants.Tenant(c.Request().Context(), principal(c).Tenant)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, t)
}

func (s *Server) patchPolicy(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	patch, err := tenancy.DecodePolicyPatch(body)
	if err != nil {
		return err
	}
	pol, err := s.tenants.PatchPolicy(c.Request().Context(), principal(c).Tenant, patch)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, pol)
}

type tokenJSON struct {
	ID        string   `json:"id"`
	Token     string   `json:"token,omitempty"`
	Sub       string   `json:"sub"`
	Roles     []string `json:"roles"`
	Name      *string  `json:"name"`
	CreatedAt Time     `json:"created_at"`
}

func toToken(k tenancy.APIKey) tokenJSON {
	return tokenJSON{ID: k.ID, Sub: k.Subject, Roles: k.Roles, Name: strPtr(k.Name), CreatedAt: Time(k.CreatedAt)}
}

func (s *Server) createToken(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Sub   string   `json:"sub"`
		Roles []string `json:"roles"`
		Name  string   `json:"name"`
	}
	if err := decodeStrict(body, &req, false); err != nil {
		return err
	}
	k, err := s.tenants.CreateKey(c.Request().Context(), principal(c), req.Sub, req.Roles, req.Name)
	if err != nil {
		return err
	}
	out := toToken(k.APIKey)
	out.Token = k.Token
	return writeJSON(c, http.StatusCreated, out)
}

func (s *Server) listTokens(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	keys, next, err := s.tenants.ListKeys(c.Request().Context(), principal(c).Tenant, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	items := make([]tokenJSON, len(keys))
	for i, k := range keys {
		items[i] = toToken(k)
	}
	return writeJSON(c, http.StatusOK, newList(items, next))
}

func (s *Server) deleteToken(c echo.Context) error {
	if err := s.tenants.DeleteKey(c.Request().Context(), principal(c).Tenant, c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
