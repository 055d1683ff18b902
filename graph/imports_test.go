package graph_test

import (
	"os/exec"
	"strings"
	"testing"
)

// graph reads the model; it never imports the services that write it (the
// lifecycle, leases, nodes, tenants) nor the HTTP API, so that a Graph can be handed
// to code that must not write and lease stays the one entry point.
func TestImportsNoDomain(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"/internal/nodes", "/internal/leasing", "/internal/lifecycle", "/internal/tenancy", "/internal/core", "/internal/server", "/api", "/lease", "/tenant"} {
			if strings.HasPrefix(pkg, "github.com/tether-run/tether") && strings.HasSuffix(pkg, banned) {
				t.Errorf("graph imports %s", pkg)
			}
		}
	}
}
