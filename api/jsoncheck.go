package api

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tether-run/tether/internal/fault"
)

// maxJSONDepth is the deepest nesting of arrays and objects a request body
// may hold, counting the body itself as 1. Every answer that embeds a stored
// value nests it a few levels deeper still, far below what any JSON decoder
// (Go's stops at 10 000) refuses.
const maxJSONDepth = 64

// smallObject is how many keys an object may hold before its duplicate check
// switches from comparing with each earlier key to a set.
const smallObject = 16

// checkJSON refuses, in one pass over a body and before anything decodes it,
// what encoding/json would let through: invalid UTF-8 (raw, or an unpaired
// surrogate escape) in any string or key, nesting deeper than maxJSONDepth,
// and an object key that appears twice, at any depth. Its errors are
// *fault.Invalid naming the path of the offending member. An empty body (or
// only white space) passes.
func checkJSON(b []byte) error {
	var keys [32]keySpan // enough for most bodies without allocating
	s := jsonScanner{b: b}
	s.space()
	if s.i == len(b) {
		return nil
	}
	if err := s.value(1, keys[:0]); err != nil {
		return err.invalid()
	}
	s.space()
	if s.i != len(b) {
		return fault.Invalidf("", "the body must hold exactly one JSON value")
	}
	return nil
}

// scanError is what the scan found wrong, with the path to it built as the
// scan unwinds (innermost element first). A syntax error names no path.
type scanError struct {
	reason string
	path   []string
	syntax bool
}

// within adds the path element elem (a key, or an index "[n]") to err as
// the scan unwinds out of a value.
func within(err *scanError, elem string) *scanError {
	if !err.syntax {
		err.path = append(err.path, elem)
	}
	return err
}

func (e *scanError) invalid() error {
	var field strings.Builder
	for _, elem := range slices.Backward(e.path) {
		if field.Len() > 0 && !strings.HasPrefix(elem, "[") {
			field.WriteByte('.')
		}
		field.WriteString(elem)
	}
	return &fault.Invalid{Field: field.String(), Reason: e.reason}
}

// jsonScanner scans a body. The keys of the objects being scanned are
// passed down the recursion (innermost last) rather than kept here, so that
// their array can stay on the stack.
type jsonScanner struct {
	b    []byte
	i    int
	stop int // for pathAt: the offset whose innermost value is sought
}

const stopFound = "(found)"

// pathAt is the path of the innermost value of b (a body checkJSON passed)
// that ends at or spans offset, such as "items[3].timeout_ms"; "" when
// there is none. It names the field of an error encoding/json reports by
// offset, which knows struct fields but not array indices.
func pathAt(b []byte, offset int) string {
	if offset <= 0 {
		return ""
	}
	var keys [32]keySpan
	s := jsonScanner{b: b, stop: offset}
	s.space()
	err := s.value(1, keys[:0])
	if err == nil || err.reason != stopFound {
		return ""
	}
	inv, _ := err.invalid().(*fault.Invalid)
	return inv.Field
}

// keySpan is a key's bytes between its quotes; escaped keys are compared
// once unescaped.
type keySpan struct {
	start, end int
	escaped    bool
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScanner) malformed() *scanError {
	if s.i >= len(s.b) {
		return &scanError{reason: "malformed JSON: unexpected end of input", syntax: true}
	}
	return &scanError{reason: "malformed JSON at byte " + strconv.Itoa(s.i+1), syntax: true}
}

func invalidf(reason string) *scanError { return &scanError{reason: reason} }

func (s *jsonScanner) value(depth int, keys []keySpan) *scanError {
	if s.stop == 0 {
		return s.scanValue(depth, keys)
	}
	start := s.i
	err := s.scanValue(depth, keys)
	if err == nil && start < s.stop && s.stop <= s.i {
		return &scanError{reason: stopFound}
	}
	return err
}

func (s *jsonScanner) scanValue(depth int, keys []keySpan) *scanError {
	if s.i >= len(s.b) {
		return s.malformed()
	}
	switch c := s.b[s.i]; {
	case c == '{':
		if depth > maxJSONDepth {
			return tooDeep()
		}
		return s.object(depth, keys)
	case c == '[':
		if depth > maxJSONDepth {
			return tooDeep()
		}
		return s.array(depth, keys)
	case c == '"':
		_, err := s.str()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return s.malformed()
}

func tooDeep() *scanError {
	return invalidf("nests arrays and objects deeper than " + strconv.Itoa(maxJSONDepth) + " levels")
}

func (s *jsonScanner) literal(lit string) *scanError {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return s.malformed()
	}
	s.i += len(lit)
	return nil
}

func (s *jsonScanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *jsonScanner) number() *scanError {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.digits() == 0:
		return s.malformed()
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return s.malformed()
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return s.malformed()
		}
	}
	return nil
}

// str scans a string from its opening quote and returns whether it held an
// escape.
func (s *jsonScanner) str() (escaped bool, err *scanError) {
	s.i++ // the opening quote
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return escaped, nil
		case c == '\\':
			escaped = true
			if err := s.escape(); err != nil {
				return escaped, err
			}
		case c < 0x20:
			return escaped, s.malformed()
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				return escaped, notUTF8()
			}
			s.i += size
		}
	}
	return escaped, s.malformed()
}

func notUTF8() *scanError { return invalidf("is not valid UTF-8") }

func unpairedSurrogate() *scanError {
	return invalidf("is not valid UTF-8 (an unpaired surrogate escape)")
}

// escape scans one escape sequence from its backslash. A \u escape of a
// surrogate must be the first half of a pair followed by the second.
func (s *jsonScanner) escape() *scanError {
	s.i++
	if s.i >= len(s.b) {
		return s.malformed()
	}
	switch s.b[s.i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i++
		return nil
	case 'u':
	default:
		return s.malformed()
	}
	r, ok := s.hex4()
	if !ok {
		return s.malformed()
	}
	switch {
	case r < 0xd800 || r > 0xdfff:
		return nil
	case r >= 0xdc00:
		return unpairedSurrogate()
	}
	if !bytes.HasPrefix(s.b[s.i:], []byte(`\u`)) {
		return unpairedSurrogate()
	}
	s.i++
	lo, ok := s.hex4()
	if !ok {
		return s.malformed()
	}
	if lo < 0xdc00 || lo > 0xdfff {
		return unpairedSurrogate()
	}
	return nil
}

// hex4 reads the four hex digits after a \u (s.i at the u).
func (s *jsonScanner) hex4() (rune, bool) {
	if s.i+5 > len(s.b) {
		return 0, false
	}
	var v rune
	for _, c := range s.b[s.i+1 : s.i+5] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	s.i += 5
	return v, true
}

func (s *jsonScanner) array(depth int, keys []keySpan) *scanError {
	s.i++ // [
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		s.space()
		if err := s.value(depth+1, keys); err != nil {
			return within(err, "["+strconv.Itoa(n)+"]")
		}
		s.space()
		if s.i >= len(s.b) {
			return s.malformed()
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.malformed()
		}
	}
}

func (s *jsonScanner) object(depth int, keys []keySpan) *scanError {
	s.i++ // {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	from := len(keys)
	var set map[string]struct{} // once the object is large
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return s.malformed()
		}
		start := s.i + 1
		escaped, err := s.str()
		if err != nil && !err.syntax {
			return invalidf("has a key that " + err.reason)
		}
		if err != nil {
			return err
		}
		k := keySpan{start: start, end: s.i - 1, escaped: escaped}
		if s.seen(k, keys[from:], &set) {
			return within(invalidf("appears more than once in the same object"), s.keyName(k))
		}
		keys = append(keys, k)
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return s.malformed()
		}
		s.i++
		s.space()
		if err := s.value(depth+1, keys); err != nil {
			return within(err, s.keyName(k))
		}
		s.space()
		if s.i >= len(s.b) {
			return s.malformed()
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.malformed()
		}
	}
}

// seen reports whether k is among the earlier keys of its object, and
// records it in set once the object has grown past smallObject keys.
func (s *jsonScanner) seen(k keySpan, earlier []keySpan, set *map[string]struct{}) bool {
	if len(earlier) < smallObject {
		for _, e := range earlier {
			if s.sameKey(e, k) {
				return true
			}
		}
		return false
	}
	if *set == nil {
		*set = make(map[string]struct{}, 2*smallObject)
		for _, e := range earlier {
			(*set)[s.key(e)] = struct{}{}
		}
	}
	name := s.key(k)
	if _, dup := (*set)[name]; dup {
		return true
	}
	(*set)[name] = struct{}{}
	return false
}

func (s *jsonScanner) sameKey(a, b keySpan) bool {
	if !a.escaped && !b.escaped {
		return bytes.Equal(s.b[a.start:a.end], s.b[b.start:b.end])
	}
	return s.key(a) == s.key(b)
}

// key is the unescaped text of k.
func (s *jsonScanner) key(k keySpan) string {
	if !k.escaped {
		return string(s.b[k.start:k.end])
	}
	var v string
	_ = json.Unmarshal(s.b[k.start-1:k.end+1], &v) // scanned already: it is a valid string
	return v
}

// keyName is k as a path element for an error: at most 64 bytes of it.
func (s *jsonScanner) keyName(k keySpan) string {
	name := s.key(k)
	if !utf8.ValidString(name) {
		return "(a key that is not valid UTF-8)"
	}
	if len(name) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "…"
	}
	return name
}
