package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
)

// readBody reads a JSON request body within the server's limit. What it
// returns is empty, or one JSON value that checkJSON has passed: valid
// UTF-8, no key twice in an object, nested at most maxJSONDepth deep. A
// body in another media type is a *fault.UnsupportedMediaType (415); a
// body without a Content-Type is read as JSON. Endpoints that take other
// media types (uploads) read their bodies themselves.
func (s *Server) readBody(c echo.Context) ([]byte, error) {
	r := c.Request()
	ct := r.Header.Get(echo.HeaderContentType)
	if r.ContentLength > 0 && !jsonMediaType(ct) {
		return nil, &fault.UnsupportedMediaType{Got: ct}
	}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return nil, &fault.TooLarge{Limit: s.cfg.MaxBodyBytes}
	}
	b, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, s.cfg.MaxBodyBytes))
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return nil, &fault.TooLarge{Limit: s.cfg.MaxBodyBytes}
	}
	if err != nil {
		return nil, fault.Invalidf("", "the request body could not be read")
	}
	if len(b) > 0 && !jsonMediaType(ct) {
		return nil, &fault.UnsupportedMediaType{Got: ct}
	}
	if err := checkJSON(b); err != nil {
		return nil, err
	}
	return b, nil
}

// jsonMediaType reports whether a request's Content-Type is JSON: absent,
// application/json or any application/*+json (a merge patch), in UTF-8.
func jsonMediaType(ct string) bool {
	if ct == "" || ct == echo.MIMEApplicationJSON {
		return true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return false
	}
	return mt == echo.MIMEApplicationJSON || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// decodeStrict decodes a JSON object body into v, rejecting unknown fields and
// trailing data, and holds every millisecond field of v to its range
// (checkDurations). An empty body decodes as {} when optional is set. The
// hot bodies take a fast path when they can (decode_fast.go).
func decodeStrict(b []byte, v any, optional bool) error {
	if len(bytes.TrimSpace(b)) == 0 {
		if optional {
			return nil
		}
		return fault.Invalidf("", "a JSON body is required")
	}
	if f, ok := v.(fastBody); ok {
		if decodeFast(b, f) {
			return checkDurations(v)
		}
		reflect.ValueOf(v).Elem().SetZero()
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(b, err)
	}
	if dec.More() {
		return fault.Invalidf("", "the body must hold exactly one JSON value")
	}
	if err := checkKeyCase(b, v); err != nil {
		return err
	}
	return checkDurations(v)
}

// decodeError words an error of encoding/json decoding b.
func decodeError(b []byte, err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return fault.Invalidf("", "the body must be a JSON object")
		}
		// The decoder's path has no array indices; the body's has.
		if p := pathAt(b, int(typeErr.Offset)); p != "" {
			field = p
		}
		return typeError(field, typeErr)
	case errors.As(err, &syntaxErr):
		return fault.Invalidf("", "malformed JSON at byte %d", syntaxErr.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return fault.Invalidf(unknownPath(b, name), "unknown field")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fault.Invalidf("", "malformed JSON: unexpected end of input")
	}
	// time.Time and other decoders report their own parse errors.
	return fault.Invalidf("", "invalid value: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// unknownPath is the path in b of the member encoding/json reported as an
// unknown field (its error names only the key): the first member spelled
// name whose path ends in it, so a field of a nested object is named with
// its object (next.max). Without one (an escaped key) it is name.
func unknownPath(b []byte, name string) string {
	key := []byte(strconv.Quote(name))
	for off := 0; off < len(b); {
		i := bytes.Index(b[off:], key)
		if i < 0 {
			break
		}
		off += i + len(key)
		j := skipSpace(b, off)
		if j >= len(b) || b[j] != ':' {
			continue
		}
		if p := pathAt(b, skipSpace(b, j+1)+1); p == name || strings.HasSuffix(p, "."+name) {
			return p
		}
	}
	return name
}

// typeError words a value that does not fit its field. A millisecond field
// states its range; a number too large for an integer field says so, rather
// than that it is of the wrong type.
func typeError(field string, e *json.UnmarshalTypeError) error {
	name := field
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	kind := jsonTypeName(e.Type.Kind().String())
	if duration.IsField(name) && kind == "integer" {
		return duration.Of(name).Invalid(field)
	}
	if kind == "integer" && strings.HasPrefix(e.Value, "number ") {
		if strings.ContainsAny(e.Value, ".eE") {
			return fault.Invalidf(field, "must be an integer (no fraction or exponent)")
		}
		return fault.Invalidf(field, "is out of range of a 64-bit integer")
	}
	return fault.Invalidf(field, "must be of type %s", kind)
}

func jsonTypeName(kind string) string {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	}
	return kind
}
