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

// reservedPrefixes are the prefixes no subject may start with, each with
// what the API means by it.
var reservedPrefixes = [...]struct{ prefix, meaning string }{
	{NodeAddressPrefix, `addresses a message to whoever holds a node ("node:<id>")`},
	{IdentityPrefix, `starts the id of an identity's node ("identity:<sub>")`},
	{SchedulePrefix, `names the runs of a schedule ("schedule:<id>")`},
}

// The skeletons of the reserved names, which every subject is compared
// with; computed once, never written.
var (
	systemSkeleton  = skeleton(SystemSubject)
	prefixSkeletons = func() (out [len(reservedPrefixes)]string) {
		for i, r := range reservedPrefixes {
			out[i] = skeleton(r.prefix)
		}
		return out
	}()
)

// ReservedPrefix returns the prefix sub starts with that no subject may
// start with, and what the API means by it; "" when there is none.
func ReservedPrefix(sub string) (prefix, meaning string) {
	for _, r := range reservedPrefixes {
		if strings.HasPrefix(sub, r.prefix) {
			return r.prefix, r.meaning
		}
	}
	return "", ""
}

// SubjectProblem says why sub may not name an identity, as the rest of a
// sentence that starts with the field's name; "" when it may. The text is
// fixed per rule: it never echoes sub.
func SubjectProblem(sub string) string {
	if !subjectChars(sub) {
		return "must be 1 to 200 printable characters: no spaces or other invisible characters " +
			"(controls, format characters such as zero-width ones, separators, private-use or " +
			"unassigned code points, a leading combining mark), and no '/', '?', '#' or '%'"
	}
	if p := ReservedSubjectProblem(sub); p != "" {
		return p
	}
	return ""
}

// ReservedSubjectProblem says why sub may not name an identity when it is,
// starts with, or looks like (lookalike.go) a name the API gives meaning
// to: the server's own name or a reserved prefix; "" when it is none of
// them. The text is fixed per name and never echoes sub.
func ReservedSubjectProblem(sub string) string {
	const system = "the name the server signs its own actions with (expiries)"
	if sub == SystemSubject {
		return fmt.Sprintf("must not be %q, %s", SystemSubject, system)
	}
	if prefix, meaning := ReservedPrefix(sub); prefix != "" {
		return fmt.Sprintf("must not start with %q, a reserved prefix: it %s", prefix, meaning)
	}
	skel := skeleton(sub)
	if skel == systemSkeleton {
		return fmt.Sprintf("must not look like %q (in another case or with look-alike letters), %s", SystemSubject, system)
	}
	for i, r := range reservedPrefixes {
		if strings.HasPrefix(skel, prefixSkeletons[i]) {
			return fmt.Sprintf("must not start with a look-alike of %q (in another case or with look-alike characters), a reserved prefix: it %s", r.prefix, r.meaning)
		}
	}
	return ""
}

// ValidSubject reports whether sub may name an identity.
func ValidSubject(sub string) bool { return SubjectProblem(sub) == "" }
