package graphstore

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// skeleton folds s to what it reads as, for comparing a subject with the
// names the API gives meaning to ("system", "node:", ...), after the
// skeletons of Unicode's confusable detection (UTS #39), for the
// look-alikes of Latin letters, digits and the colon that matter here:
//
//  1. compatibility decomposition (NFKD): fullwidth, mathematical, circled
//     and superscript letters become plain ones, ligatures their letters;
//  2. combining marks dropped: "sýstem" reads as "system" at a glance;
//  3. letters of other scripts that look like Latin ones mapped to them
//     (Cyrillic "с", Greek "Υ", ...), then lower case;
//  4. letter pairs that read as one letter: "rn" as "m", "cl" as "d";
//  5. the characters that read as one another in many fonts made one:
//     "l", "1", "|" and "i"; "0" and "o".
//
// Two strings with one skeleton may be told apart by a careful reader;
// different skeletons do not prove that they can be.
func skeleton(s string) string {
	if !isASCII(s) {
		s = norm.NFKD.String(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unicode.Is(unicode.M, r) {
			continue
		}
		b.WriteRune(latinLookAlike(unicode.ToLower(latinLookAlike(r))))
	}
	folded := pairLookAlikes.Replace(b.String())
	return strings.Map(func(r rune) rune {
		switch r {
		case 'l', '1', '|', '\u01c0':
			return 'i'
		case '0':
			return 'o'
		}
		return r
	}, folded)
}

// pairLookAlikes are the letter pairs that read as one letter.
var pairLookAlikes = strings.NewReplacer("rn", "m", "cl", "d")

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// latinLookAlike returns the lower-case Latin letter (or ':') r looks
// like, or r itself. Capitals are listed where only the capital is a
// look-alike (Cyrillic "Н" of "H"; its lower case "н" is not "h"); small
// capitals and the Cyrillic "т" and "м" read as the letter they shrink.
func latinLookAlike(r rune) rune {
	if r < utf8.RuneSelf {
		return r
	}
	switch r {
	// Cyrillic.
	case 'а', 'А':
		return 'a'
	case 'В':
		return 'b'
	case 'с', 'С', 'ϲ', 'Ϲ', 'ᴄ':
		return 'c'
	case 'ԁ', 'Ԁ', 'ᴅ':
		return 'd'
	case 'е', 'Е', 'ᴇ':
		return 'e'
	case 'ɡ', 'ց':
		return 'g'
	case 'һ', 'Һ', 'Н', 'Η', 'հ', 'ʜ':
		return 'h'
	case 'і', 'І', 'ӏ', 'Ӏ', 'ı', 'ɩ', 'ɪ', 'ι', 'Ι':
		return 'i'
	case 'ј', 'Ј', 'ϳ', 'ȷ':
		return 'j'
	case 'к', 'К', 'κ', 'Κ':
		return 'k'
	case 'м', 'М', 'Μ', 'ᴍ':
		return 'm'
	case 'Ν', 'ո', 'ɴ':
		return 'n'
	case 'о', 'О', 'ο', 'Ο', 'օ', 'ᴏ':
		return 'o'
	case 'р', 'Р', 'ρ', 'Ρ':
		return 'p'
	case 'ԛ', 'Ԛ':
		return 'q'
	case 'ѕ', 'Ѕ', 'ꜱ':
		return 's'
	case 'т', 'Т', 'Τ', 'ᴛ':
		return 't'
	case 'υ', 'ս':
		return 'u'
	case 'ν':
		return 'v'
	case 'ԝ', 'Ԝ':
		return 'w'
	case 'х', 'Х', 'χ', 'Χ':
		return 'x'
	case 'у', 'У', 'Υ', 'ʏ':
		return 'y'
	// Greek capitals not listed above.
	case 'Α', 'α', 'ɑ':
		return 'a'
	case 'Β':
		return 'b'
	case 'Ε':
		return 'e'
	case 'Ζ':
		return 'z'
	// Colons.
	case 'ː', '˸', '׃', '։', '᛬', '⁚', '∶', 'ꓽ', '꞉':
		return ':'
	}
	return r
}
