package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/fault"
)

// readBody reads the request body within the server's limit.
func (s *Server) readBody(c echo.Context) ([]byte, error) {
	r := c.Request()
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
	return b, nil
}

// decodeStrict decodes a JSON object body into v, rejecting unknown fields and
// trailing data. An empty body decodes as {} when optional is set.
func decodeStrict(b []byte, v any, optional bool) error {
	if len(bytes.TrimSpace(b)) == 0 {
		if optional {
			return nil
		}
		return fault.Invalidf("", "a JSON body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return fault.Invalidf("", "the body must hold exactly one JSON value")
	}
	return nil
}

func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return fault.Invalidf("", "the body must be a JSON object")
		}
		return fault.Invalidf(field, "must be of type %s", jsonTypeName(typeErr.Type.Kind().String()))
	case errors.As(err, &syntaxErr):
		return fault.Invalidf("", "malformed JSON at byte %d", syntaxErr.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return fault.Invalidf(name, "unknown field")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fault.Invalidf("", "malformed JSON: unexpected end of input")
	}
	// time.Time and other decoders report their own parse errors.
	return fault.Invalidf("", "invalid value: %s", strings.TrimPrefix(err.Error(), "json: "))
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
