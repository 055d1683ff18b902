package pyclientgen

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// pyType is the Python annotation of a schema in models.py. A $ref to a
// model is written as a quoted forward reference, so models may refer to
// each other in any order.
func pyType(n *yaml.Node) (string, error) {
	return typeOf(n, true)
}

// opType is the annotation of a schema in _operations.py, where
// `from __future__ import annotations` makes every annotation lazy, so model
// names need no quotes (and may sit inside cast's string).
func opType(n *yaml.Node) (string, error) {
	return typeOf(n, false)
}

func typeOf(n *yaml.Node, quoteRefs bool) (string, error) {
	if n == nil {
		return "Any", nil
	}
	t, err := typeOfNotNull(n, quoteRefs)
	if err != nil {
		return "", err
	}
	if flag(n, "nullable") && t != "Any" {
		return "Optional[" + t + "]", nil
	}
	return t, nil
}

func typeOfNotNull(n *yaml.Node, quoteRefs bool) (string, error) {
	if name := schemaRef(n); name != "" {
		if quoteRefs {
			return strconv.Quote(name), nil
		}
		return name, nil
	}
	if str(n, "$ref") != "" {
		return "", fmt.Errorf("unsupported $ref %q in a schema", str(n, "$ref"))
	}
	if all := get(n, "allOf"); all != nil {
		if len(all.Content) != 1 {
			return "", fmt.Errorf("allOf with %d members is not supported", len(all.Content))
		}
		return typeOfNotNull(all.Content[0], quoteRefs)
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts := get(n, k); alts != nil {
			members := make([]string, 0, len(alts.Content))
			for _, alt := range alts.Content {
				t, err := typeOf(alt, quoteRefs)
				if err != nil {
					return "", err
				}
				members = append(members, t)
			}
			if len(members) == 0 {
				return "", fmt.Errorf("%s without members", k)
			}
			if len(members) == 1 {
				return members[0], nil
			}
			return "Union[" + strings.Join(members, ", ") + "]", nil
		}
	}
	if get(n, "not") != nil {
		return "", fmt.Errorf("not is not supported")
	}
	switch typ := str(n, "type"); typ {
	case "string":
		if enum := strs(n, "enum"); len(enum) > 0 {
			return literal(enum), nil
		}
		if str(n, "format") == "binary" {
			return "bytes", nil
		}
		return "str", nil
	case "integer":
		return "int", nil
	case "number":
		return "float", nil
	case "boolean":
		return "bool", nil
	case "array":
		item, err := typeOf(get(n, "items"), quoteRefs)
		if err != nil {
			return "", err
		}
		return "List[" + item + "]", nil
	case "object":
		extra := get(n, "additionalProperties")
		if extra != nil && extra.Kind == yaml.MappingNode && get(n, "properties") == nil {
			v, err := typeOf(extra, quoteRefs)
			if err != nil {
				return "", err
			}
			return "Dict[str, " + v + "]", nil
		}
		// Inline objects with members have no name of their own.
		return "Dict[str, Any]", nil
	case "":
		return "Any", nil // any JSON value
	default:
		return "", fmt.Errorf("unsupported schema type %q", typ)
	}
}

func literal(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	return "Literal[" + strings.Join(q, ", ") + "]"
}

// writeModel writes the model of one named schema: a Literal for a string
// enum, a TypedDict for an object with members, an alias otherwise.
func writeModel(w *writer, name string, n *yaml.Node) error {
	props := pairs(get(n, "properties"))
	extra := get(n, "additionalProperties")
	openObject := extra != nil && (extra.Kind == yaml.MappingNode || extra.Value == "true")
	if str(n, "type") != "object" || len(props) == 0 || openObject {
		t, err := typeOfNotNull(n, true)
		if err != nil {
			return fmt.Errorf("schema %s: %w", name, err)
		}
		if len(props) > 0 {
			// An open object with named members (BatchOp): the members are
			// documented, the type admits the rest.
			var keys []string
			for _, p := range props {
				keys = append(keys, p.key)
			}
			w.comment(str(n, "description") + "\n\nMembers: " + strings.Join(keys, ", ") + " (required: " + strings.Join(strs(n, "required"), ", ") + "), and any others.")
		} else {
			w.comment(str(n, "description"))
		}
		w.line("%s = %s", name, t)
		w.line("")
		w.line("")
		return nil
	}

	required := map[string]bool{}
	for _, r := range strs(n, "required") {
		required[r] = true
	}
	type field struct{ name, typ, doc string }
	fields := make([]field, 0, len(props))
	classSyntax := true
	for _, p := range props {
		t, err := pyType(p.val)
		if err != nil {
			return fmt.Errorf("schema %s, member %s: %w", name, p.key, err)
		}
		if !required[p.key] {
			t = "NotRequired[" + t + "]"
		}
		if !isIdentifier(p.key) || pythonKeywords[p.key] {
			classSyntax = false
		}
		fields = append(fields, field{p.key, t, str(p.val, "description")})
	}

	doc := str(n, "description")
	if classSyntax {
		w.line("class %s(TypedDict):", name)
		w.indent++
		if doc != "" {
			w.docstring(doc)
		}
		for _, f := range fields {
			w.comment(f.doc)
			w.line("%s: %s", f.name, f.typ)
		}
		w.indent--
	} else {
		// A member named like a Python keyword ("from") needs the
		// functional form.
		w.comment(doc)
		w.line("%s = TypedDict(", name)
		w.indent++
		w.line("%q,", name)
		w.line("{")
		w.indent++
		for _, f := range fields {
			w.comment(f.doc)
			w.line("%q: %s,", f.name, f.typ)
		}
		w.indent--
		w.line("},")
		w.indent--
		w.line(")")
	}
	w.line("")
	w.line("")
	return nil
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true,
	"def": true, "del": true, "elif": true, "else": true, "except": true,
	"finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true,
	"not": true, "or": true, "pass": true, "raise": true, "return": true,
	"try": true, "while": true, "with": true, "yield": true,
}
