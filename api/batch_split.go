package api

import (
	"slices"
	"strings"
)

// splitOp is the fast path of reading one op of POST /v1/batch: its "op"
// and "id" strings and the object of its other members (the op's body),
// without decoding the op into a map and encoding the rest again. raw has
// passed checkJSON (valid, no key twice). The body's members are sorted by
// key, as json.Marshal of the rest of the map wrote them, so that decoding
// it reports the same first unknown field. ok is false, and the caller
// takes the general path, for anything but the plain case: raw not an
// object, a key with an escape, "op" or "id" missing or not a string
// without escapes.
func splitOp(raw []byte) (name, id string, body []byte, ok bool) {
	type member struct{ key, val []byte }
	var buf [4]member
	members := buf[:0]
	var haveOp, haveID bool
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return "", "", nil, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return "", "", nil, false
	}
	size := 2
	for i < len(raw) {
		if raw[i] != '"' {
			return "", "", nil, false
		}
		end := i + 1
		for end < len(raw) && raw[end] != '"' {
			if raw[end] == '\\' {
				return "", "", nil, false
			}
			end++
		}
		key := raw[i+1 : end]
		i = skipSpace(raw, end+1)
		if i >= len(raw) || raw[i] != ':' {
			return "", "", nil, false
		}
		start := skipSpace(raw, i+1)
		stop := skipValue(raw, start)
		if stop < 0 {
			return "", "", nil, false
		}
		val := raw[start:stop]
		switch string(key) {
		case "op", "id":
			s, plain := plainString(val)
			if !plain {
				return "", "", nil, false
			}
			if key[0] == 'o' {
				name, haveOp = s, true
			} else {
				id, haveID = s, true
			}
		default:
			members = append(members, member{key, val})
			size += len(key) + len(val) + 4
		}
		i = skipSpace(raw, stop)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
			continue
		}
		break
	}
	if !haveOp || !haveID {
		return "", "", nil, false
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(string(a.key), string(b.key)) })
	body = make([]byte, 0, size)
	body = append(body, '{')
	for j, m := range members {
		if j > 0 {
			body = append(body, ',')
		}
		body = append(body, '"')
		body = append(body, m.key...)
		body = append(body, '"', ':')
		body = append(body, m.val...)
	}
	return name, id, append(body, '}'), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value that starts at b[i] (valid
// JSON), or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(b) {
				return -1
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && (b[i-1] == '"' || b[i-1] == '}' || b[i-1] == ']') {
			return i
		}
	}
	if depth != 0 {
		return -1
	}
	return i
}

// plainString is the content of a JSON string literal v without escapes.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	s := v[1 : len(v)-1]
	for _, c := range s {
		if c == '\\' || c == '"' {
			return "", false
		}
	}
	return string(s), true
}
