package main

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// runCheck runs `tether check dir` with the built binary and fails the test
// unless it exits 0 (it reports whether it did).
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
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Errorf("tether check %s exited %d after a crash:\n%s", dir, exit.ExitCode(), out)
		return false
	}
	t.Errorf("tether check %s: %v\n%s", dir, err, out)
	return false
}
