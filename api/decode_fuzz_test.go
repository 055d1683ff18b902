package api

import (
	"errors"
	"testing"

	"github.com/tether-run/tether/fault"
	"github.com/tether-run/tether/work"
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
		var spec work.NodeSpec
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
