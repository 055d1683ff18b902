package graphstore

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The patterns validName implements by hand, as regular expressions.
var (
	clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	typePattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)
	queuePattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
)

func TestValidNameMatchesItsPattern(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := ValidQueue(s), queuePattern.MatchString(s); got != want {
			t.Fatalf("ValidQueue(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := ValidType(s), typePattern.MatchString(s); got != want {
			t.Fatalf("ValidType(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := ValidClientID(s), clientIDPattern.MatchString(s) && !IsIdentityID(s); got != want {
			t.Fatalf("ValidClientID(%q) = %v, the pattern says %v", s, got, want)
		}
	}
	for _, s := range []string{
		"", "a", "Z", "0", ".", "-a", "_a", ":a", "a.b_c:d-e", "a b", "a/b", "a%b",
		"é", "aé", "a\x00", "a\n", "a\x7f", "identity:alice",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65),
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129),
	} {
		check(s)
	}
	// Random strings over an alphabet of the allowed bytes and their
	// neighbours, of lengths around both limits.
	const alphabet = "aZ09._:-/ @[`{\x00\xffé+,;"
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := r.IntN(140)
		var b strings.Builder
		for range n {
			if r.IntN(8) == 0 {
				b.WriteByte(alphabet[r.IntN(len(alphabet))])
			} else {
				b.WriteByte("abcXYZ019._:-"[r.IntN(13)])
			}
		}
		check(b.String())
	}
}
