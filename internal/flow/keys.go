package flow

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tether-run/tether/internal/fault"
)

// MaxKeys is the most concurrency keys a node carries.
const MaxKeys = 8

// MaxKeyBytes is the longest concurrency key, in bytes.
const MaxKeyBytes = 256

// KeyProblem says what is wrong with k as a concurrency key, or "".
func KeyProblem(k string) string {
	switch {
	case k == "":
		return "must not be empty"
	case len(k) > MaxKeyBytes:
		return fmt.Sprintf("must be at most %d bytes", MaxKeyBytes)
	case !utf8.ValidString(k):
		return "must be valid UTF-8"
	case strings.IndexFunc(k, unicode.IsControl) >= 0:
		return "must not hold control characters"
	}
	return ""
}

// ValidKeys checks a node's concurrency keys and returns them with repeats
// dropped (nil for none). field names the member in errors
// ("concurrency_keys", "nodes[2].concurrency_keys"). A key ending in '*' is
// refused: a prefix names limits, not what a node holds.
func ValidKeys(keys []string, field string) ([]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if len(keys) > MaxKeys {
		return nil, fault.Invalidf(field, "at most %d keys", MaxKeys)
	}
	out := make([]string, 0, len(keys))
	for i, k := range keys {
		if p := KeyProblem(k); p != "" {
			return nil, fault.Invalidf(fmt.Sprintf("%s[%d]", field, i), "%s", p)
		}
		if IsPrefix(k) {
			return nil, fault.Invalidf(fmt.Sprintf("%s[%d]", field, i), "must not end in '*' (a prefix names limits only)")
		}
		if !contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// IsPrefix reports whether a limit's key names a prefix ("repo:*").
func IsPrefix(k string) bool { return strings.HasSuffix(k, "*") }

// PrefixOf is what keys matching the prefix limit k start with.
func PrefixOf(k string) string { return strings.TrimSuffix(k, "*") }

func contains(s []string, k string) bool {
	for _, v := range s {
		if v == k {
			return true
		}
	}
	return false
}
