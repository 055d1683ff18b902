package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	tether "github.com/tether-run/tether"
	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// A node is defined in a few shapes that are not generated from one
// another: the stored record (graphstore.Node), the create body
// (nodes.NodeSpec, which a schedule's template reuses), the answer
// (nodeJSON, whose appender is generated from it) and the spec's Node and
// NodeCreate schemas (from which the clients are generated). These tests
// fail when a field is added to one of them and missed in another; each
// deliberate difference is listed, with why.

// storedOnly are the stored node's fields a node answer leaves out.
var storedOnly = []string{
	"tenant",     // a node is read within its tenant; the path says which
	"last_fence", // the counter claims draw fences from; the live lease carries its fence
	"last_run",   // how the last run ended, kept to answer a retried completion again
	"slot_held",  // flow control's bookkeeping of a hand-off, not the caller's
}

// answerOnly are the node answer's fields not stored in the record: both are
// computed when the node is read (nodes.NodeView).
var answerOnly = []string{"ready", "blocked_by"}

// specOnly are create body fields that are not stored as themselves.
var specOnly = []string{
	"delay_ms",   // stored as run_at, from the create's instant
	"depends_on", // stored as depends_on edges, not in the node
}

// storedNotCreated are stored fields a create body cannot set: the lifecycle,
// the lease and bookkeeping write them.
var storedNotCreated = []string{
	"tenant", "status", "attempts", "lease", "last_fence", "result", "error", "progress",
	"last_run", "usage", "usage_total", "version", "created_by", "created_at", "updated_at",
	"traceparent", // the trace context of the create request, not of its body
	"slot_held",   // set by a hand-off (a release to another identity)
}

func jsonNames(t reflect.Type) []string {
	var out []string
	jsonFields(t, func(name string, _ reflect.StructField, _ []int) { out = append(out, name) })
	return out
}

// specProperties is the property names of a schema of openapi.yaml.
func specProperties(t *testing.T, schema string) []string {
	t.Helper()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties yaml.Node `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	require.NoError(t, yaml.Unmarshal(tether.OpenAPI, &doc))
	s, ok := doc.Components.Schemas[schema]
	require.True(t, ok, "openapi.yaml has no schema %s", schema)
	var out []string
	for i := 0; i < len(s.Properties.Content); i += 2 {
		out = append(out, s.Properties.Content[i].Value)
	}
	return out
}

// sameSet fails unless got and want hold the same names, whatever the order.
func sameSet(t *testing.T, want, got []string, msg string) {
	t.Helper()
	want, got = slices.Sorted(slices.Values(want)), slices.Sorted(slices.Values(got))
	require.Equal(t, want, got, msg)
}

func without(names []string, drop ...[]string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		for _, d := range drop {
			if slices.Contains(d, n) {
				return true
			}
		}
		return false
	})
}

func TestNodeAnswerHasEveryStoredField(t *testing.T) {
	t.Parallel()
	stored := jsonNames(reflect.TypeFor[records.Node]())
	answer := jsonNames(reflect.TypeFor[nodeJSON]())
	for _, n := range storedOnly {
		require.Contains(t, stored, n, "storedOnly lists %s, which the stored node no longer has", n)
	}
	sameSet(t, without(stored, storedOnly), without(answer, answerOnly),
		"records.Node and nodeJSON (api/dto.go) differ: add the field to both, or to storedOnly with why")
}

func TestNodeAnswerMatchesSpec(t *testing.T) {
	t.Parallel()
	answer := jsonNames(reflect.TypeFor[nodeJSON]())
	sameSet(t, answer, specProperties(t, "Node"),
		"nodeJSON (api/dto.go) and openapi.yaml's Node differ: add the field to both")
	// The generated client follows the spec; a stale one misses the field.
	sameSet(t, answer, jsonNames(reflect.TypeFor[client.Node]()),
		"client.Node is stale: run go generate ./client/")
}

func TestNodeAppenderWritesEveryField(t *testing.T) {
	t.Parallel()
	want := jsonNames(reflect.TypeFor[nodeJSON]())
	for _, v := range testNodes() {
		n := toNode(v)
		// A member left out when empty is written once set.
		rv := reflect.ValueOf(&n).Elem()
		for i := range rv.NumField() {
			f := rv.Type().Field(i)
			if strings.Contains(f.Tag.Get("json"), ",omitempty") && f.Type.Kind() == reflect.Pointer && rv.Field(i).IsNil() {
				rv.Field(i).Set(reflect.New(f.Type.Elem()))
			}
		}
		b, err := n.appendJSON(nil)
		require.NoError(t, err)
		var keys []string
		dec := json.NewDecoder(bytes.NewReader(b))
		tok, err := dec.Token()
		require.NoError(t, err)
		require.Equal(t, json.Delim('{'), tok)
		for dec.More() {
			k, err := dec.Token()
			require.NoError(t, err)
			keys = append(keys, k.(string))
			var skip json.RawMessage
			require.NoError(t, dec.Decode(&skip))
		}
		require.Equal(t, want, keys, "the node appender is stale: run go generate ./api/")
	}
}

func TestNodeSpecMatchesStoredAndSpec(t *testing.T) {
	t.Parallel()
	spec := jsonNames(reflect.TypeFor[nodes.NodeSpec]())
	stored := jsonNames(reflect.TypeFor[records.Node]())
	sameSet(t, without(stored, storedNotCreated), without(spec, specOnly),
		"nodes.NodeSpec and records.Node differ: add the field to both, or to storedNotCreated or specOnly with why")
	sameSet(t, spec, specProperties(t, "NodeCreate"),
		"nodes.NodeSpec and openapi.yaml's NodeCreate differ: add the field to both")
	sameSet(t, spec, jsonNames(reflect.TypeFor[client.NodeCreate]()),
		"client.NodeCreate is stale: run go generate ./client/")
}
