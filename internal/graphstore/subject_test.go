package graphstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// No subject may start with a prefix the API gives meaning to, and the
// reason names the prefix; a prefix anywhere but at the start, or spelled
// in another case, is an ordinary subject.
func TestSubjectsRefuseReservedPrefixes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ sub, prefix string }{
		{"node:n1", "node:"},
		{"node:", "node:"},
		{"identity:alice", "identity:"},
		{"schedule:nightly", "schedule:"},
	} {
		require.False(t, ValidSubject(tc.sub), tc.sub)
		problem := SubjectProblem(tc.sub)
		require.Contains(t, problem, `"`+tc.prefix+`"`, tc.sub)
		require.Contains(t, problem, "reserved", tc.sub)
		prefix, meaning := ReservedPrefix(tc.sub)
		require.Equal(t, tc.prefix, prefix)
		require.NotEmpty(t, meaning)
	}
	// The server's own name is not an identity's either.
	require.False(t, ValidSubject(SystemSubject))
	require.Contains(t, SubjectProblem(SystemSubject), `must not be "system"`)
	for _, sub := range []string{"alice", "systems", "left_claw", "svc:node:n1", "nodes:n1", "node", "ci@example.com", strings.Repeat("a", 200)} {
		require.True(t, ValidSubject(sub), sub)
		require.Empty(t, SubjectProblem(sub), sub)
	}
	for _, sub := range []string{"", "a b", "a/b", "a?b", "a#b", "a%b", strings.Repeat("a", 201)} {
		require.False(t, ValidSubject(sub), sub)
		require.Contains(t, SubjectProblem(sub), "printable characters", sub)
	}
}

// An identity node made for a subject before its prefix was reserved keeps
// a valid id, so it can still be read and removed.
func TestIdentityNodesOfReservedSubjectsStayAddressable(t *testing.T) {
	t.Parallel()
	require.True(t, ValidID(IdentityID("node:n1")))
	require.False(t, ValidID(IdentityID("a/b")))
	require.False(t, ValidClientID(IdentityID("alice")))
}

// invisibleChars are characters that show nothing (or nothing of their
// own), one of each kind subjectChars refuses, with its name.
var invisibleChars = map[string]string{
	"\u0000":       "NUL (Cc)",
	"\u0085":       "next line, a C1 control (Cc)",
	"\u009b":       "CSI, a C1 control (Cc)",
	"\u00a0":       "no-break space (Zs)",
	"\u00ad":       "soft hyphen (Cf)",
	"\u034f":       "combining grapheme joiner (Mn, default-ignorable)",
	"\u115f":       "Hangul choseong filler (Lo, default-ignorable)",
	"\u180e":       "Mongolian vowel separator (Cf)",
	"\u2000":       "en quad (Zs)",
	"\u200b":       "zero-width space (Cf)",
	"\u200c":       "zero-width non-joiner (Cf)",
	"\u200d":       "zero-width joiner (Cf)",
	"\u200e":       "left-to-right mark (Cf)",
	"\u202e":       "right-to-left override (Cf)",
	"\u2028":       "line separator (Zl)",
	"\u2029":       "paragraph separator (Zp)",
	"\u2060":       "word joiner (Cf)",
	"\u2066":       "left-to-right isolate (Cf)",
	"\u2800":       "Braille pattern blank (So)",
	"\u3000":       "ideographic space (Zs)",
	"\u3164":       "Hangul filler (Lo, default-ignorable)",
	"\ue000":       "private use (Co)",
	"\ufe0f":       "variation selector 16 (Mn)",
	"\ufeff":       "byte-order mark (Cf)",
	"\ufffd":       "replacement character (a lone surrogate decoded)",
	"\U000e0041":   "tag latin capital letter A (Cf)",
	"\U000f0000":   "supplementary private use (Co)",
	"\U0010ffff":   "noncharacter (Cn)",
	"\u0378":       "unassigned (Cn)",
	"\xed\xa0\x80": "a surrogate in UTF-8 (invalid)",
	"\xff":         "invalid UTF-8",
}

// A subject with a character that shows nothing, anywhere in it, is
// refused, so no subject can read as another; every script's letters,
// marks after a letter and symbols pass.
func TestSubjectsRefuseInvisibleCharacters(t *testing.T) {
	t.Parallel()
	for c, name := range invisibleChars {
		for _, sub := range []string{"system" + c, c + "alice", "al" + c + "ice", c} {
			require.False(t, ValidSubject(sub), "%s in %q", name, sub)
			require.Contains(t, SubjectProblem(sub), "invisible characters", name)
		}
	}
	for _, sub := range []string{"\u0301alice", "\u20ddbot"} {
		require.False(t, ValidSubject(sub), "a leading combining mark: %q", sub)
	}
	for _, sub := range []string{"zoë", "zoe\u0308", "Ĳsselmeer", "алиса", "ユーザー", "用户", "عامل", "agent-🤖", "naïve", "ci@example.com"} {
		require.True(t, ValidSubject(sub), "%q: %s", sub, SubjectProblem(sub))
	}
}

// A subject that reads as a reserved name, in another case, with letters
// of another script, fullwidth or mathematical forms, marks or letter pairs
// that look like it, is refused like the name itself; the problem names
// what it looks like.
func TestSubjectsRefuseLookAlikesOfReservedNames(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{
		"System", "SYSTEM", "ѕystem", "sуstem", "syѕtеm", "ѕуѕтем", "ｓｙｓｔｅｍ",
		"𝐬𝐲𝐬𝐭𝐞𝐦", "sýstem", "syste\u0301m", "systern", "ꜱystem", "SYSTΕM",
	} {
		require.False(t, ValidSubject(sub), sub)
		require.Contains(t, SubjectProblem(sub), `must not look like "system"`, sub)
	}
	for sub, prefix := range map[string]string{
		"Node:n1":        "node:",
		"nоde:n1":        "node:",
		"n0de:n1":        "node:",
		"ｎｏｄｅ：n1":        "node:",
		"node\u2236n1":   "node:",
		"noclе:n1":       "node:",
		"IDENTITY:alice": "identity:",
		"ldentity:alice": "identity:",
		"Schedule:daily": "schedule:",
		"ѕсhеdulе:daily": "schedule:",
	} {
		require.False(t, ValidSubject(sub), sub)
		problem := SubjectProblem(sub)
		require.Contains(t, problem, `look-alike of "`+prefix+`"`, sub)
		require.Contains(t, problem, "reserved prefix", sub)
	}
	for _, sub := range []string{"systems", "sys-tem", "mysystem", "nodes:n1", "node", "svc:node:n1", "identity", "scheduler:x"} {
		require.True(t, ValidSubject(sub), "%q: %s", sub, SubjectProblem(sub))
	}
}

// The identity node of a subject made before invisible characters were
// refused keeps a valid id.
func TestIdentityNodesOfOldSubjectsStayAddressable(t *testing.T) {
	t.Parallel()
	require.True(t, ValidID(IdentityID("system\u200b")))
	require.True(t, ValidID(IdentityID("a\u00a0b")))
	require.False(t, ValidID(IdentityID("a b")))
}
