package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

func (s *Server) createNode(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var spec nodes.NodeSpec
	if err := decodeStrict(body, &spec, false); err != nil {
		return err
	}
	idem, err := idempotency(c, "createNode", spec)
	if err != nil {
		return err
	}
	made, err := s.nodes.CreateMany(c.Request().Context(), caller(c), []nodes.NodeSpec{spec}, "", idem)
	if err != nil {
		return err
	}
	out, err := s.createdNodes(made)
	if err != nil {
		return err
	}
	// A create answered by the node its unique key names made nothing: 200.
	status := http.StatusCreated
	if made[0].Duplicate {
		status = http.StatusOK
	}
	return writeJSON(c, status, out[0])
}

// createdNodes are the answers of creates: each node as it is, a duplicate
// naming itself in duplicate_of.
func (s *Server) createdNodes(made []nodes.Created) ([]nodeJSON, error) {
	ns := make([]*records.Node, len(made))
	for i, m := range made {
		ns[i] = m.Node
	}
	views, err := s.nodes.Views(ns...)
	if err != nil {
		return nil, err
	}
	out := toNodes(views)
	for i, m := range made {
		if m.Duplicate {
			out[i].DuplicateOf = &out[i].ID
		}
	}
	return out, nil
}

func (s *Server) createNodesBatch(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Items []nodes.NodeSpec `json:"items"`
	}
	if err := decodeStrict(body, &req, false); err != nil {
		return err
	}
	idem, err := idempotency(c, "createNodesBatch", req.Items)
	if err != nil {
		return err
	}
	made, err := s.nodes.CreateMany(c.Request().Context(), caller(c), req.Items, "items", idem)
	if err != nil {
		return err
	}
	out, err := s.createdNodes(made)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, map[string]any{"items": out})
}

func (s *Server) getNode(c echo.Context) error {
	id, err := nodeID(c)
	if err != nil {
		return err
	}
	v, err := s.nodes.Get(principal(c).Tenant, id)
	if err != nil {
		return err
	}
	setETag(c, v.Version)
	return writeJSON(c, http.StatusOK, toNode(v))
}

// idempotency reads the Idempotency-Key header. The request digest is taken
// over the decoded body re-encoded, so whitespace and key order do not count.
func idempotency(c echo.Context, op string, decoded any) (*nodes.Idempotency, error) {
	key := c.Request().Header.Get("Idempotency-Key")
	if key == "" {
		return nil, nil
	}
	if !nodes.ValidIdempotencyKey(key) {
		return nil, fault.Invalidf("Idempotency-Key", "must be 1-255 printable ASCII characters")
	}
	canonical, err := json.Marshal(decoded)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte(op+"\n"), canonical...))
	return &nodes.Idempotency{Key: key, Hash: hex.EncodeToString(sum[:])}, nil
}

func setETag(c echo.Context, version int64) {
	c.Response().Header().Set("ETag", `"`+strconv.FormatInt(version, 10)+`"`)
}

func (s *Server) listNodes(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	f, err := filterFromQuery(c.QueryParams())
	if err != nil {
		return err
	}
	nq, ready, err := f.query()
	if err != nil {
		return err
	}
	nq.Limit, nq.Cursor, nq.ScanBudget = limit, c.QueryParam("cursor"), nodes.ListScanBudget
	views, next, err := s.nodes.List(principal(c).Tenant, nq, ready)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, newList(toNodes(views), next))
}

func (s *Server) patchNode(c echo.Context) error {
	id, err := nodeID(c)
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	patch, err := nodes.DecodeNodePatch(body)
	if err != nil {
		return err
	}
	p := nodes.PatchParams{Caller: caller(c), NodeID: id, Patch: patch}
	if v := c.Request().Header.Get("If-Match"); v != "" {
		version, any, ok := nodes.ParseETag(v)
		if !ok {
			return fault.Invalidf("If-Match", `must be an entity tag such as "3"`)
		}
		if !any {
			p.IfMatch = &version
		}
	}
	n, err := s.nodes.Patch(c.Request().Context(), p)
	if err != nil {
		return err
	}
	views, err := s.nodes.Views(n)
	if err != nil {
		return err
	}
	setETag(c, n.Version)
	return writeJSON(c, http.StatusOK, toNode(views[0]))
}

func (s *Server) deleteNode(c echo.Context) error {
	id, err := nodeID(c)
	if err != nil {
		return err
	}
	force, err := boolParam(c, "force")
	if err != nil {
		return err
	}
	if err := s.nodes.Delete(c.Request().Context(), caller(c), id, force != nil && *force); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listNodeEdges(c echo.Context) error {
	id, err := nodeID(c)
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	q := graphstore.EdgeQuery{Dir: graphstore.DirBoth, Type: c.QueryParam("type")}
	switch d := c.QueryParam("dir"); d {
	case "", "both":
	case "in", "out":
		q.Dir = graphstore.Direction(d)
	default:
		return fault.Invalidf("dir", "must be out, in or both")
	}
	if q.Type != "" && !graphstore.ValidEdgeType(q.Type) {
		return fault.Invalidf("type", "must match [a-z][a-z0-9_]{0,63}")
	}
	inc, err := boolParam(c, "include_retired")
	if err != nil {
		return err
	}
	q.IncludeRetired = inc != nil && *inc
	edges, next, err := s.nodes.Edges(principal(c).Tenant, id, q, limit, c.QueryParam("cursor"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, newList(toEdges(edges), next))
}

func (s *Server) getSubgraph(c echo.Context) error {
	id, err := nodeID(c)
	if err != nil {
		return err
	}
	depth := 3
	if v := c.QueryParam("depth"); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 0 || d > 10 {
			return fault.Invalidf("depth", "must be an integer from 0 to 10")
		}
		depth = d
	}
	var types []string // none: every type
	if v := c.QueryParam("types"); v != "" {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if !graphstore.ValidEdgeType(t) {
				return fault.Invalidf("types", "%q is not an edge type", t)
			}
			types = append(types, t)
		}
	}
	nodes, edges, err := s.nodes.Subgraph(principal(c).Tenant, id, depth, types)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, map[string]any{"nodes": toNodes(nodes), "edges": toEdges(edges)})
}

func (s *Server) createEdge(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var spec nodes.EdgeSpec
	if err := decodeStrict(body, &spec, false); err != nil {
		return err
	}
	e, err := s.nodes.AddEdge(c.Request().Context(), caller(c), spec)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, toEdge(e))
}

func (s *Server) deleteEdge(c echo.Context) error {
	q := c.QueryParams()
	for _, k := range []string{"from", "type", "to"} {
		if q.Get(k) == "" {
			return fault.Invalidf(k, "is required")
		}
	}
	if err := s.nodes.RetireEdge(c.Request().Context(), caller(c), q.Get("from"), q.Get("type"), q.Get("to")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// nodeID validates the :id path parameter.
func nodeID(c echo.Context) (string, error) {
	id := c.Param("id")
	if !graphstore.ValidID(id) {
		return "", fault.Invalidf("id", "is not a valid node id")
	}
	return id, nil
}

func limitParam(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, fault.Invalidf("limit", "must be an integer from 1 to 1000")
	}
	return n, nil
}

func boolParam(c echo.Context, name string) (*bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return nil, fault.Invalidf(name, "must be true or false")
	}
	return &b, nil
}
