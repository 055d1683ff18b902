package main

import (
	"strings"
	"testing"
)

// `tether token mint` refuses a --sub that starts with a prefix the API
// gives meaning to, naming the prefix, and prints no token; `token create`
// is refused by the server (400 bad_request on sub, naming it) and makes
// no key.
func TestCLITokensRefuseReservedSubjects(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	reserved := map[string]string{"node:": "node:n1", "identity:": "identity:alice", "schedule:": "schedule:nightly"}
	for prefix, sub := range reserved {
		r := e.fails(2, "", "token", "mint", "--sub", sub, "--tenant", "acme", "--secret", "s")
		requireContains(t, r.stderr, `--sub must not start with "`+prefix+`", a reserved prefix`)
		if r.stdout != "" {
			t.Errorf("token mint --sub %s printed %q", sub, r.stdout)
		}
		r = e.fails(1, e.admin, "token", "create", "--sub", sub)
		requireContains(t, r.stderr, "400 bad_request", `must not start with "`+prefix+`"`)
	}
	ls := e.ok(e.admin, "token", "ls")
	for _, sub := range reserved {
		if strings.Contains(ls, sub) {
			t.Errorf("a key for %s was made:\n%s", sub, ls)
		}
	}
}
