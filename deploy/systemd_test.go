package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// unitForCheck writes the unit with its two absolute paths moved into a
// temporary directory (systemd-analyze verify checks that ExecStart is an
// executable and that the unit parses), and returns the unit's path.
func unitForCheck(t *testing.T) string {
	t.Helper()
	unit, err := os.ReadFile("systemd/tether.service")
	require.NoError(t, err)
	env, err := os.ReadFile("systemd/tether.env")
	require.NoError(t, err)
	dir := t.TempDir()
	// Any executable stands in for the tether binary: this test's own.
	self, err := os.Executable()
	require.NoError(t, err)
	s := string(unit)
	require.Contains(t, s, "ExecStart=/usr/local/bin/tether serve")
	require.Contains(t, s, "EnvironmentFile=/etc/tether/tether.env")
	s = strings.Replace(s, "ExecStart=/usr/local/bin/tether", "ExecStart="+self, 1)
	s = strings.Replace(s, "EnvironmentFile=/etc/tether/tether.env", "EnvironmentFile="+filepath.Join(dir, "tether.env"), 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tether.env"), env, 0o600))
	path := filepath.Join(dir, "tether.service")
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
	return path
}

// TestSystemdUnit runs systemd-analyze verify on the unit (any complaint,
// an unknown key included, fails) and holds its hardening to an exposure
// level of 2.0 or less ("OK") in systemd-analyze security.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("skipped: systemd-analyze is not installed (Debian's systemd package has it), so the unit is not verified")
	}
	unit := unitForCheck(t)
	out, err := exec.Command("systemd-analyze", "verify", unit).CombinedOutput()
	require.NoError(t, err, "systemd-analyze verify: %s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify complains")

	out, err = exec.Command("systemd-analyze", "security", "--offline=yes", unit).CombinedOutput()
	if err != nil && strings.Contains(string(out), "--offline") {
		t.Logf("this systemd-analyze cannot assess a unit offline (%s): the exposure is not checked", strings.TrimSpace(string(out)))
		return
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	require.NotNil(t, m, "systemd-analyze security: %s", out)
	level, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	t.Logf("systemd-analyze security: exposure %.1f", level)
	require.LessOrEqual(t, level, 2.0, "the unit's hardening slipped:\n%s", out)
}

// The unit keeps the hardening the deploy guide promises.
func TestSystemdUnitHardening(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("systemd/tether.service")
	require.NoError(t, err)
	for _, want := range []string{"DynamicUser=yes", "StateDirectory=tether", "ProtectSystem=strict", "NoNewPrivileges=yes", "ProtectHome=yes", "PrivateTmp=yes", "CapabilityBoundingSet=\n", "TimeoutStopSec=45"} {
		require.Contains(t, string(b), want)
	}
}
