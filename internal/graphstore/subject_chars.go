package graphstore

import (
	"unicode"
	"unicode/utf8"
)

// subjectChars reports whether sub is 1 to 200 bytes of valid UTF-8, every
// character of it visible, none of them '/', '?', '#' or '%' (a subject is
// a path segment of its identity node's id).
//
// A subject is shown wherever an event says who acted, so a character that
// shows nothing would let one subject read exactly as another ("system"
// followed by a zero-width space reads as "system"). Visible means a
// letter, mark, number, punctuation or symbol (Unicode's L, M, N, P, S),
// which leaves out every control (Cc), format character (Cf: zero-width
// space and joiners, direction overrides, the byte-order mark, tags),
// space and separator (Zs, Zl, Zp: no-break space, U+2028, U+2029),
// private-use (Co), surrogate (Cs) and unassigned (Cn) code point; then
// also the few of those categories that render as nothing (Unicode's
// default-ignorable code points: variation selectors, the combining
// grapheme joiner, Hangul fillers), the blank Braille pattern, and U+FFFD,
// which stands for what a decoder could not read (a lone surrogate in
// JSON arrives as it). A subject may not start with a combining mark,
// which would combine with whatever is shown before it.
func subjectChars(sub string) bool {
	if sub == "" || len(sub) > maxSubjectLength || !utf8.ValidString(sub) {
		return false
	}
	for i, r := range sub {
		if !visibleRune(r) || r == '/' || r == '?' || r == '#' || r == '%' {
			return false
		}
		if i == 0 && unicode.Is(unicode.M, r) {
			return false
		}
	}
	return true
}

// visibleRune reports whether r shows something when printed.
func visibleRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r > ' ' && r < 0x7f
	}
	switch {
	case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S),
		unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector),
		r == '\u2800', // Braille pattern blank
		r == utf8.RuneError:
		return false
	}
	return true
}

// identityIDChars is the rule subjects followed before subjectChars
// refused invisible characters: bytes from '!' up, but not DEL, '/', '?',
// '#' or '%'. An identity node made for such a subject stays addressable
// by its id, so it can still be read and removed.
func identityIDChars(sub string) bool {
	if sub == "" || len(sub) > maxSubjectLength {
		return false
	}
	for _, r := range sub {
		if r < 0x21 || r == 0x7f || r == '/' || r == '?' || r == '#' || r == '%' {
			return false
		}
	}
	return true
}
