package tenancy

import "github.com/tether-run/tether/internal/graphstore"

// subjectReason is why a credential's subject (what: "token sub", "API key
// sub") is refused: the reserved prefix that starts it or that it looks
// like and what that prefix means, the server's own name (or a look-alike
// of it), or else that it is not a valid subject. It is fixed text per
// rule; the subject itself is never echoed.
func subjectReason(what, sub string) string {
	if p := graphstore.SubjectProblem(sub); p != "" && p == graphstore.ReservedSubjectProblem(sub) {
		return what + " " + p
	}
	return what + " is not a valid subject"
}
