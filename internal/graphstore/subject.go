package graphstore

import (
	"fmt"
	"strings"
)

// A subject names an identity: a token's sub, an API key's subject, a
// node's target, the identity a release hands a node off to, a message's
// "to". Some prefixes mean something else wherever the API reads an
// address or shows who acted, so no identity may start with one: an
// identity spelled "node:n1" would otherwise pass for the holder of n1.
const (
	// NodeAddressPrefix addresses a message to whoever holds a node:
	// "node:<id>".
	NodeAddressPrefix = "node:"
	// SchedulePrefix names the runs of a schedule, which create the nodes
	// they make and sign their events: "schedule:<id>".
	SchedulePrefix = "schedule:"
	// SystemSubject is the name the server signs its own actions with
	// (a lease's expiry); no identity may take it.
	SystemSubject = "system"
)

// maxSubjectLength bounds a subject, in bytes.
const maxSubjectLength = 200

// ReservedPrefix returns the prefix sub starts with that no subject may
// start with, and what the API means by it; "" when there is none.
func ReservedPrefix(sub string) (prefix, meaning string) {
	for _, r := range [...]struct{ prefix, meaning string }{
		{NodeAddressPrefix, `addresses a message to whoever holds a node ("node:<id>")`},
		{IdentityPrefix, `starts the id of an identity's node ("identity:<sub>")`},
		{SchedulePrefix, `names the runs of a schedule ("schedule:<id>")`},
	} {
		if strings.HasPrefix(sub, r.prefix) {
			return r.prefix, r.meaning
		}
	}
	return "", ""
}

// SubjectProblem says why sub may not name an identity, as the rest of a
// sentence that starts with the field's name; "" when it may.
func SubjectProblem(sub string) string {
	if !subjectChars(sub) {
		return "must be 1 to 200 printable characters without spaces, '/', '?', '#' or '%'"
	}
	if sub == SystemSubject {
		return fmt.Sprintf("must not be %q, the name the server signs its own actions with (expiries)", SystemSubject)
	}
	if prefix, meaning := ReservedPrefix(sub); prefix != "" {
		return fmt.Sprintf("must not start with %q, a reserved prefix: it %s", prefix, meaning)
	}
	return ""
}

// ValidSubject reports whether sub may name an identity.
func ValidSubject(sub string) bool { return SubjectProblem(sub) == "" }

// subjectChars reports whether sub is 1 to 200 bytes of printable
// characters other than space, '/', '?', '#' and '%' (a subject is a path
// segment of its identity node's id).
func subjectChars(sub string) bool {
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
