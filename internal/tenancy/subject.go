package tenancy

import "github.com/tether-run/tether/internal/graphstore"

// subjectReason is why a credential's subject (what: "token sub", "API key
// sub") is refused: the reserved prefix that starts it and what that
// prefix means, the server's own name, or else that it is not a valid
// subject. It is fixed text
// per prefix; the subject itself is never echoed.
func subjectReason(what, sub string) string {
	if prefix, _ := graphstore.ReservedPrefix(sub); prefix != "" || sub == graphstore.SystemSubject {
		return what + " " + graphstore.SubjectProblem(sub)
	}
	return what + " is not a valid subject"
}
