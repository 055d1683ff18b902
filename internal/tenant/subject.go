package tenant

import "github.com/tether-run/tether/internal/graph"

// subjectReason is why a credential's subject (what: "token sub", "API key
// sub") is refused: the reserved prefix that starts it and what that
// prefix means, the server's own name, or else that it is not a valid
// subject. It is fixed text
// per prefix; the subject itself is never echoed.
func subjectReason(what, sub string) string {
	if prefix, _ := graph.ReservedPrefix(sub); prefix != "" || sub == graph.SystemSubject {
		return what + " " + graph.SubjectProblem(sub)
	}
	return what + " is not a valid subject"
}
