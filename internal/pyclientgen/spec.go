package pyclientgen

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// spec is the parsed document, kept as YAML nodes so that maps keep their
// order.
type spec struct {
	root *yaml.Node
}

func parseSpec(src []byte) (*spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("error parsing the spec: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the spec is not a YAML mapping")
	}
	return &spec{root: doc.Content[0]}, nil
}

// pair is one key and value of a mapping, in document order.
type pair struct {
	key string
	val *yaml.Node
}

// pairs lists a mapping's members in order; nil for anything else.
func pairs(n *yaml.Node) []pair {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := make([]pair, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, pair{key: n.Content[i].Value, val: n.Content[i+1]})
	}
	return out
}

// get is a mapping's member key, or nil.
func get(n *yaml.Node, key string) *yaml.Node {
	for _, p := range pairs(n) {
		if p.key == key {
			return p.val
		}
	}
	return nil
}

// str is the scalar at key, or "".
func str(n *yaml.Node, key string) string {
	v := get(n, key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}

// flag reports whether the scalar at key is true.
func flag(n *yaml.Node, key string) bool {
	return str(n, key) == "true"
}

// strs is the sequence of scalars at key.
func strs(n *yaml.Node, key string) []string {
	v := get(n, key)
	if v == nil || v.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for _, c := range v.Content {
		out = append(out, c.Value)
	}
	return out
}

// resolve follows a local $ref ("#/components/..."), once or more.
func (s *spec) resolve(n *yaml.Node) (*yaml.Node, error) {
	for range 10 {
		ref := str(n, "$ref")
		if ref == "" {
			return n, nil
		}
		target, err := s.lookup(ref)
		if err != nil {
			return nil, err
		}
		n = target
	}
	return nil, fmt.Errorf("$ref chain too long at %s", str(n, "$ref"))
}

func (s *spec) lookup(ref string) (*yaml.Node, error) {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("only local $refs are supported, not %q", ref)
	}
	n := s.root
	for _, part := range strings.Split(path, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		if n = get(n, part); n == nil {
			return nil, fmt.Errorf("$ref %q points at nothing", ref)
		}
	}
	return n, nil
}

// schemaRef is the model name a $ref to components/schemas names, or "".
func schemaRef(n *yaml.Node) string {
	name, _ := strings.CutPrefix(str(n, "$ref"), "#/components/schemas/")
	if name == str(n, "$ref") {
		return ""
	}
	return name
}
