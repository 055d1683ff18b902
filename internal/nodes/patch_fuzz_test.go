package nodes

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// FuzzNodePatch: any patch body is either rejected with fault.Invalid or
// applied leaving a node that still satisfies the create rules.
func FuzzNodePatch(f *testing.F) {
	for _, s := range []string{
		`{"title":"x"}`, `{"queue":null}`, `{"queue":"q2","priority":3}`, `{"props":{"a":null,"b":{"c":1}}}`,
		`{"labels":["a","a",""]}`, `{"max_attempts":0}`, `{"run_at":"2030-01-01T00:00:00Z"}`, `{"timeout_ms":-1}`,
		`{"status":"done"}`, `[]`, `{"target":"a/b"}`, `{"title":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := DecodeNodePatch(body)
		var invalid *fault.Invalid
		if err != nil {
			if !errors.As(err, &invalid) {
				t.Fatalf("unexpected error kind %T", err)
			}
			return
		}
		n := &records.Node{ID: "n", Type: "t", Status: records.StatusQueued, Queue: "q", MaxAttempts: 3,
			Labels: []string{}, Props: map[string]any{}, CreatedAt: time.Unix(0, 0)}
		if _, err := applyPatch(n, p); err != nil {
			if !errors.As(err, &invalid) {
				t.Fatalf("unexpected error kind %T", err)
			}
			return
		}
		switch {
		case n.MaxAttempts < 1:
			t.Fatal("max_attempts below 1")
		case n.Queue != "" && !graphstore.ValidQueue(n.Queue):
			t.Fatalf("invalid queue %q", n.Queue)
		case n.Target != "" && !graphstore.ValidSubject(n.Target):
			t.Fatalf("invalid target %q", n.Target)
		case n.Queue == "" && n.Status == records.StatusQueued:
			t.Fatal("queued without a queue")
		case n.TimeoutMS != nil && *n.TimeoutMS < 1:
			t.Fatal("timeout below 1")
		}
		for _, l := range n.Labels {
			if l == "" {
				t.Fatal("empty label")
			}
		}
	})
}

func FuzzParseETag(f *testing.F) {
	for _, s := range []string{`"3"`, `W/"3"`, `*`, `3`, `"x"`, ``, `"-1"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		version, any, ok := ParseETag(v)
		if any && version != 0 {
			t.Fatal("wildcard with a version")
		}
		if ok && !any {
			// What parses names one version, and that version's tag parses back to it.
			again, _, ok2 := ParseETag(`"` + strconv.FormatInt(version, 10) + `"`)
			if !ok2 || again != version {
				t.Fatalf("%q parsed as %d, which does not round-trip", v, version)
			}
		}
	})
}
