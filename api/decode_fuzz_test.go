package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/nodes"
)

// FuzzDecodeNodeSpec: any body either decodes or is a clean bad_request; it
// never panics and never yields an internal error.
func FuzzDecodeNodeSpec(f *testing.F) {
	for _, s := range []string{
		`{"type":"task"}`, `{"type":"task","labels":["a"],"props":{"x":{"y":1}}}`,
		`{"type":1}`, `{"typo":1}`, `[]`, `{"type":"a"}{}`, `{"run_at":"2030-01-01T00:00:00Z","type":"t"}`,
		`{"run_at":"yesterday","type":"t"}`, `{"backoff":{"factor":"x"}}`, ``, `null`, `{"priority":1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var spec nodes.NodeSpec
		err := decodeStrict(body, &spec, false)
		var invalid *fault.Invalid
		if err != nil && !errors.As(err, &invalid) {
			t.Fatalf("decode error of unexpected kind %T: %v", err, err)
		}
		if p, known := problemFor(err); err != nil && (!known || p.Status != 400) {
			t.Fatalf("decode error maps to %d (known=%v)", p.Status, known)
		}
	})
}

// FuzzCheckJSON: the body check never panics, refuses only with a
// *fault.Invalid, and passes nothing that is not one valid JSON value.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `[[[[1]]]]`, "\"v\xc3\x28\xff\"", `"\ud800"`,
		`"\ud83d\ude00"`, `{"a":[1,2,{"b":null}]}`, `-0.5e+3`, `{"a" 1}`, `[1,]`, ``, ` `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := checkJSON(body)
		var invalid *fault.Invalid
		if err != nil && !errors.As(err, &invalid) {
			t.Fatalf("check error of unexpected kind %T: %v", err, err)
		}
		if err == nil && len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) {
			t.Fatalf("passed a body that is not JSON: %q", body)
		}
	})
}
