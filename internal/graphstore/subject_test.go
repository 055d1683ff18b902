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
	for _, sub := range []string{"alice", "systems", "System", "left_claw", "svc:node:n1", "Node:n1", "nodes:n1", "node", "ci@example.com", strings.Repeat("a", 200)} {
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
