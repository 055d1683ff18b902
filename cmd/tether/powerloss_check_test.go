package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// allowMissingCheckEnv lets the power-loss test pass over a `tether check`
// sub-command that does not exist yet (it logs that, once). Without it a
// missing sub-command fails the test. TEMPORARY: delete this switch (and
// the branch in runCheck that reads it) once `tether check` exists.
const allowMissingCheckEnv = "TETHER_POWERLOSS_ALLOW_MISSING_CHECK"

var missingCheckLogged sync.Once

// runCheck runs `tether check dir` with the built binary and fails the test
// unless it exits 0 (it reports whether it did). A binary without the
// sub-command fails it too, with a message that says so.
func runCheck(t *testing.T, bin, dir string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "check", dir)
	cmd.Env = baseEnv()
	out, err := cmd.CombinedOutput()
	if err == nil {
		return true
	}
	if strings.Contains(string(out), `unknown command "check"`) {
		if os.Getenv(allowMissingCheckEnv) == "1" {
			missingCheckLogged.Do(func() {
				t.Logf("tether check does not exist yet; skipped because %s=1", allowMissingCheckEnv)
			})
			return true
		}
		t.Errorf("tether check %s: the binary has no `check` sub-command, and the power-loss test requires it "+
			"after every crash (set %s=1 to skip it until it exists): %s", dir, allowMissingCheckEnv, strings.TrimSpace(string(out)))
		return false
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Errorf("tether check %s exited %d after a crash:\n%s", dir, exit.ExitCode(), out)
		return false
	}
	t.Errorf("tether check %s: %v\n%s", dir, err, out)
	return false
}
