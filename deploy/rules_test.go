package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAlertingRules checks prometheus/alerts.yml with promtool and runs its
// unit tests (prometheus/alerts_test.yml): every alert fires on synthetic
// series when it should and not otherwise.
func TestAlertingRules(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (apt-get install prometheus): the alerting rules are not checked")
	}
	for _, args := range [][]string{
		{"check", "rules", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %v:\n%s", args, out)
		t.Logf("promtool %v:\n%s", args, out)
	}
}

// TestAlertingRulesUseExportedSeries: every tether_ series a rule reads is
// one docs/metrics.md lists, so a renamed series cannot silence an alert.
func TestAlertingRulesUseExportedSeries(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("prometheus/alerts.yml")
	require.NoError(t, err)
	doc, err := os.ReadFile("../docs/metrics.md")
	require.NoError(t, err)
	names := regexp.MustCompile(`\btether_[a-z_]*[a-z]\b`).FindAllString(string(rules), -1)
	require.NotEmpty(t, names)
	for _, name := range names {
		require.True(t, strings.Contains(string(doc), "`"+name+"`"), "alerts.yml reads %s, which docs/metrics.md does not list", name)
	}
}
