package pyclientgen

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// acceptsBoth are the operations whose answer may come as JSON or as a
// stream of server-sent events that ends with the answer, and whose server
// wants both in Accept: MCP's streamable HTTP POST (the MCP specification
// requires it). The client reads either (see _transport.read). Other
// operations that offer JSON or an endless stream (listEvents) ask for
// JSON only.
var acceptsBoth = map[string]bool{"mcpPost": true}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operation is what a generated method needs to know of one operation.
type operation struct {
	id, method, path string
	pyName           string
	doc              string
	pathParams       []param
	kwParams         []param // query and header parameters, keyword-only
	body             *requestBody
	result           result
	longPoll         string // a Python expression for the long poll's ms, or ""
}

type param struct {
	name, in, pyName, typ string
	required              bool
}

// requestBody is how the body is sent: JSON (with contentType) or raw bytes.
type requestBody struct {
	typ         string
	required    bool
	contentType string
	binary      bool
}

// result is what a method returns: decoded JSON, text, bytes or nothing.
type result struct {
	kind     string // "json", "text", "bytes" or "none"
	typ      string
	optional bool   // JSON, or nothing on a 2xx without a body (204, 202)
	accept   string // the Accept header, or ""
}

func (s *spec) operations() ([]operation, error) {
	var ops []operation
	for _, pp := range pairs(get(s.root, "paths")) {
		item := pp.val
		for _, mp := range pairs(item) {
			if !slices.Contains(httpMethods, mp.key) {
				continue
			}
			op, err := s.operation(pp.key, mp.key, item, mp.val)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", strings.ToUpper(mp.key), pp.key, err)
			}
			ops = append(ops, op)
		}
	}
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.pyName] {
			return nil, fmt.Errorf("two operations are named %s", op.pyName)
		}
		seen[op.pyName] = true
	}
	return ops, nil
}

func (s *spec) operation(path, method string, item, n *yaml.Node) (operation, error) {
	op := operation{id: str(n, "operationId"), method: strings.ToUpper(method), path: path}
	if op.id == "" {
		return op, fmt.Errorf("no operationId")
	}
	op.pyName = snake(op.id)
	op.doc = operationDoc(op, n)

	// Path-item parameters first, then the operation's (which win by name and place).
	var raw []*yaml.Node
	for _, src := range []*yaml.Node{get(item, "parameters"), get(n, "parameters")} {
		if src != nil {
			raw = append(raw, src.Content...)
		}
	}
	byKey := map[string]int{}
	var params []param
	for _, r := range raw {
		p, err := s.resolve(r)
		if err != nil {
			return op, err
		}
		t, err := opType(get(p, "schema"))
		if err != nil {
			return op, fmt.Errorf("parameter %s: %w", str(p, "name"), err)
		}
		pr := param{name: str(p, "name"), in: str(p, "in"), typ: t, required: flag(p, "required")}
		pr.pyName = pyIdent(snake(strings.ReplaceAll(pr.name, "-", "_")))
		if pr.in == "cookie" {
			return op, fmt.Errorf("cookie parameter %s is not supported", pr.name)
		}
		key := pr.in + ":" + pr.name
		if i, ok := byKey[key]; ok {
			params[i] = pr
			continue
		}
		byKey[key] = len(params)
		params = append(params, pr)
	}
	for _, seg := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(path, -1) {
		i := slices.IndexFunc(params, func(p param) bool { return p.in == "path" && p.name == seg[1] })
		if i < 0 {
			return op, fmt.Errorf("path parameter %s is not declared", seg[1])
		}
		op.pathParams = append(op.pathParams, params[i])
	}
	for _, p := range params {
		if p.in == "query" || p.in == "header" {
			op.kwParams = append(op.kwParams, p)
			if p.in == "query" && p.name == "wait_ms" {
				op.longPoll = p.pyName
			}
		}
	}

	if rb := get(n, "requestBody"); rb != nil {
		body, longPoll, err := s.requestBody(rb)
		if err != nil {
			return op, err
		}
		op.body = body
		if longPoll && op.longPoll == "" {
			op.longPoll = `(body or {}).get("wait_ms")`
		}
	}

	res, err := s.result(get(n, "responses"))
	if err != nil {
		return op, err
	}
	if acceptsBoth[op.id] {
		res.accept = "application/json, text/event-stream"
	}
	op.result = res

	names := map[string]bool{"self": true}
	for _, p := range append(slices.Clone(op.pathParams), op.kwParams...) {
		if names[p.pyName] {
			return op, fmt.Errorf("two parameters are named %s in Python", p.pyName)
		}
		names[p.pyName] = true
	}
	if op.body != nil && (names["body"] || (op.body.binary && names["content_type"])) {
		return op, fmt.Errorf("a parameter is named like the body")
	}
	return op, nil
}

// requestBody picks the body's media type: a merge patch over plain JSON
// (the server takes both; the first says what the body means), JSON over
// raw bytes. longPoll reports a wait_ms member.
func (s *spec) requestBody(rb *yaml.Node) (*requestBody, bool, error) {
	rb, err := s.resolve(rb)
	if err != nil {
		return nil, false, err
	}
	content := get(rb, "content")
	body := &requestBody{required: flag(rb, "required")}
	for _, ct := range []string{"application/merge-patch+json", "application/json"} {
		if mt := get(content, ct); mt != nil {
			schema := get(mt, "schema")
			t, err := opType(schema)
			if err != nil {
				return nil, false, fmt.Errorf("request body: %w", err)
			}
			body.typ, body.contentType = t, ct
			resolved, err := s.resolve(schema)
			if err != nil {
				return nil, false, err
			}
			return body, get(get(resolved, "properties"), "wait_ms") != nil, nil
		}
	}
	for _, p := range pairs(content) {
		if str(get(p.val, "schema"), "format") == "binary" {
			body.typ, body.contentType, body.binary = "bytes", p.key, true
			return body, false, nil
		}
	}
	return nil, false, fmt.Errorf("no JSON or binary request body")
}

// result reads the 2xx answers.
func (s *spec) result(responses *yaml.Node) (result, error) {
	var res result
	var empty bool
	var accept []string
	for _, p := range pairs(responses) {
		code, err := strconv.Atoi(p.key)
		if err != nil || code < 200 || code > 399 {
			continue
		}
		r, err := s.resolve(p.val)
		if err != nil {
			return res, err
		}
		content := pairs(get(r, "content"))
		if len(content) == 0 {
			empty = true
			continue
		}
		kind, typ := "", ""
		for _, c := range content {
			switch {
			case c.key == "application/json":
				t, err := opType(get(c.val, "schema"))
				if err != nil {
					return res, fmt.Errorf("response %d: %w", code, err)
				}
				kind, typ = "json", t
			case kind == "" && (strings.HasPrefix(c.key, "text/") || c.key == "application/yaml"):
				kind, typ = "text", "str"
			case kind == "" && (c.key == "*/*" || c.key == "application/octet-stream"):
				kind, typ = "bytes", "bytes"
			}
			if kind == "json" {
				break
			}
		}
		if kind == "" {
			return res, fmt.Errorf("response %d: no media type the client reads", code)
		}
		if res.kind != "" && (res.kind != kind || res.typ != typ) {
			return res, fmt.Errorf("2xx answers of different shapes (%s %s, %s %s)", res.kind, res.typ, kind, typ)
		}
		res.kind, res.typ = kind, typ
		if kind == "json" {
			accept = []string{"application/json"}
		} else {
			for _, c := range content {
				if !slices.Contains(accept, c.key) {
					accept = append(accept, c.key)
				}
			}
		}
	}
	switch {
	case res.kind == "":
		res.kind, res.typ = "none", "None"
	case empty && res.kind == "json":
		res.optional = true
	}
	res.accept = strings.Join(accept, ", ")
	return res, nil
}

func operationDoc(op operation, n *yaml.Node) string {
	var b strings.Builder
	if s := strings.TrimSpace(str(n, "summary")); s != "" {
		b.WriteString(strings.TrimSuffix(s, ".") + ".\n\n")
	}
	if d := strings.TrimSpace(str(n, "description")); d != "" {
		b.WriteString(d + "\n\n")
	}
	fmt.Fprintf(&b, "``%s %s`` (%s).", op.method, op.path, op.id)
	return b.String()
}

// writeOperation writes one method of the sync (async false) or the async
// client.
func writeOperation(w *writer, op operation, async bool) {
	args := []string{"self"}
	for _, p := range op.pathParams {
		args = append(args, p.pyName+": str")
	}
	if b := op.body; b != nil {
		if b.required {
			args = append(args, "body: "+b.typ)
		} else {
			args = append(args, "body: "+optional(b.typ)+" = None")
		}
	}
	var kw []string
	for _, p := range op.kwParams {
		if p.required {
			kw = append(kw, p.pyName+": "+p.typ)
		} else {
			kw = append(kw, p.pyName+": "+optional(p.typ)+" = None")
		}
	}
	if op.body != nil && op.body.binary {
		kw = append(kw, fmt.Sprintf("content_type: str = %q", op.body.contentType))
	}
	if len(kw) > 0 {
		args = append(args, "*")
		args = append(args, kw...)
	}
	ret := op.result.typ
	if op.result.optional {
		ret = optional(ret)
	}

	def, call, end := "def", "return cast('"+ret+"', self._call(", "))"
	if async {
		def, call = "async def", "return cast('"+ret+"', await self._call("
	}
	if op.result.kind == "none" {
		call, end = "self._call(", ")"
		if async {
			call = "await self._call("
		}
	}
	w.line("%s %s(", def, op.pyName)
	w.indent++
	for _, a := range args {
		w.line("%s,", a)
	}
	w.indent--
	w.line(") -> %s:", ret)
	w.indent++
	w.docstring(op.doc)
	w.line("%s", call)
	w.indent++
	w.line("%q,", op.method)
	w.line("%q,", op.path)
	if len(op.pathParams) > 0 {
		w.line("path_params=%s,", dict(op.pathParams, "path"))
	}
	if q := dict(op.kwParams, "query"); q != "" {
		w.line("query=%s,", q)
	}
	if h := dict(op.kwParams, "header"); h != "" {
		w.line("headers=%s,", h)
	}
	if b := op.body; b != nil {
		if b.binary {
			w.line("content=body,")
			w.line("content_type=content_type,")
		} else {
			w.line("json=body,")
			w.line("content_type=%q,", b.contentType)
		}
	}
	if op.result.accept != "" {
		w.line("accept=%q,", op.result.accept)
	}
	w.line("result=%q,", op.result.kind)
	if op.longPoll != "" {
		w.line("long_poll_ms=%s,", op.longPoll)
	}
	w.indent--
	w.line("%s", end)
	w.indent--
	w.line("")
}

// dict is a Python dict literal from wire names to the parameters of one
// place, or "" when there are none.
func dict(params []param, in string) string {
	var items []string
	for _, p := range params {
		if p.in == in {
			items = append(items, fmt.Sprintf("%q: %s", p.name, p.pyName))
		}
	}
	if len(items) == 0 {
		return ""
	}
	return "{" + strings.Join(items, ", ") + "}"
}

var (
	lowerUpper = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	upperWord  = regexp.MustCompile(`([A-Z]+)([A-Z][a-z])`)
)

// snake turns an operationId or a parameter name into snake_case:
// claimNextMany → claim_next_many, getOpenAPI → get_open_api.
func snake(s string) string {
	s = upperWord.ReplaceAllString(s, "${1}_${2}")
	s = lowerUpper.ReplaceAllString(s, "${1}_${2}")
	return strings.ToLower(s)
}

// pyIdent makes a name usable as a Python parameter: from → from_.
func pyIdent(s string) string {
	if pythonKeywords[s] {
		return s + "_"
	}
	return s
}

// optional wraps t in Optional, once.
func optional(t string) string {
	if strings.HasPrefix(t, "Optional[") || t == "Any" || t == "None" {
		return t
	}
	return "Optional[" + t + "]"
}
