package mcp

import (
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	yaml "go.yaml.in/yaml/v3"

	"github.com/tether-run/tether/api"
)

// A tool's input schema is inferred from its Go type, the generated
// client's request type; the descriptions of its members, which the Go
// types keep only as comments, are the spec's (openapi.yaml), so that an
// agent reads the same words as the API's reference.

// spec is the part of openapi.yaml that describes request members.
type spec struct {
	Paths      map[string]map[string]yaml.Node `yaml:"paths"`
	Components struct {
		Schemas    map[string]schema `yaml:"schemas"`
		Parameters map[string]param  `yaml:"parameters"`
	} `yaml:"components"`
}

// schema is what describe reads of a spec schema: its description, its
// members', and the schema a member refers to (directly or as the one
// element of allOf), whose description and members serve when the member
// has none of its own.
type schema struct {
	Description string            `yaml:"description"`
	Ref         string            `yaml:"$ref"`
	AllOf       []schema          `yaml:"allOf"`
	Items       *schema           `yaml:"items"`
	Properties  map[string]schema `yaml:"properties"`
}

// resolved is sc, or the component schema it refers to.
func (s *spec) resolved(sc schema) schema {
	ref := sc.Ref
	if ref == "" && len(sc.AllOf) == 1 {
		ref = sc.AllOf[0].Ref
	}
	if name, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok {
		target := s.Components.Schemas[name]
		if sc.Description != "" {
			target.Description = sc.Description
		}
		return target
	}
	return sc
}

// describe gives every member of sc, at any depth, the description of the
// same member of from where it has none.
func (s *spec) describe(sc *jsonschema.Schema, from schema) {
	for name, p := range sc.Properties {
		member, ok := from.Properties[name]
		if !ok {
			continue
		}
		member = s.resolved(member)
		if p.Description == "" {
			p.Description = strings.TrimSpace(member.Description)
		}
		s.describe(p, member)
		if p.Items != nil && member.Items != nil {
			s.describe(p.Items, s.resolved(*member.Items))
		}
	}
}

type param struct {
	Ref         string `yaml:"$ref"`
	Name        string `yaml:"name"`
	In          string `yaml:"in"`
	Description string `yaml:"description"`
}

var loadSpec = sync.OnceValues(func() (*spec, error) {
	var s spec
	if err := yaml.Unmarshal(api.OpenAPI(), &s); err != nil {
		return nil, fmt.Errorf("error reading the embedded openapi.yaml: %w", err)
	}
	return &s, nil
})

// descriptions are the spec's descriptions of the members of the request
// body schemas named, and of the query parameters of the operations named
// ("GET /v1/inbox"), by member name.
func descriptions(from ...string) map[string]string {
	s, err := loadSpec()
	if err != nil {
		panic(err) // the spec is embedded: every test would catch this
	}
	out := map[string]string{}
	for _, name := range from {
		method, path, isOp := strings.Cut(name, " ")
		if !isOp {
			for prop, p := range s.Components.Schemas[name].Properties {
				out[prop] = s.resolved(p).Description
			}
			continue
		}
		node, ok := s.Paths[path][strings.ToLower(method)]
		if !ok {
			panic("openapi.yaml has no operation " + name)
		}
		var op struct {
			Parameters []param `yaml:"parameters"`
		}
		if err := node.Decode(&op); err != nil {
			panic(fmt.Sprintf("operation %s: %v", name, err))
		}
		for _, p := range op.Parameters {
			if ref, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
				p = s.Components.Parameters[ref]
			}
			if p.In == "query" {
				out[p.Name] = p.Description
			}
		}
	}
	return out
}

// inputSchema is In's schema with the spec's descriptions of its members
// (a description the Go type gives, such as node_id's, stays).
func inputSchema[In any](from ...string) *jsonschema.Schema {
	sc, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(In), err)) // a programming error, caught by every test
	}
	desc := descriptions(from...)
	for name, p := range sc.Properties {
		if p.Description == "" && desc[name] != "" {
			p.Description = strings.TrimSpace(desc[name])
		}
	}
	s, err := loadSpec()
	if err != nil {
		panic(err)
	}
	for _, name := range from {
		if !strings.Contains(name, " ") {
			s.describe(sc, s.Components.Schemas[name])
		}
	}
	return sc
}
