package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// tether work refuses every bad flag before it calls anything, as a usage
// error (exit 2) that names the flag.
func TestWorkRefusesBadFlags(t *testing.T) {
	t.Setenv("TETHER_URL", "http://127.0.0.1:1") // nothing listens: no call is made
	t.Setenv("TETHER_TOKEN", "a-token")
	for want, args := range map[string][]string{
		"no command: tether work --queue QUEUE -- COMMAND":   {"--queue", "q"},
		"--queue is required":                                {"--", "true"},
		`--queue "a b" is not a queue name`:                  {"--queue", "a b", "--", "true"},
		"--concurrency must be from 1 to 1000":               {"--queue", "q", "--concurrency", "1001", "--", "true"},
		"--ttl must be at least 1s":                          {"--queue", "q", "--ttl", "10ms", "--", "true"},
		"--grace must not be negative":                       {"--queue", "q", "--grace", "-1s", "--", "true"},
		"--heartbeat must be at least 1s":                    {"--queue", "q", "--heartbeat", "1ms", "--", "true"},
		`--worker-name "-x" is not a worker name`:            {"--queue", "q", "--worker-name", "-x", "--", "true"},
		`--inbox-signal must be HUP, USR1, USR2 or WINCH`:    {"--queue", "q", "--inbox-signal", "KILL", "--", "true"},
		`cannot run "/no/such/command"`:                      {"--queue", "q", "--", "/no/such/command"},
		"--output is a flag of the client commands":          {"-o", "json", "--queue", "q", "--", "true"},
		"--retries (or TETHER_RETRIES) must be from 0 to 20": {"--queue", "q", "--retries", "21", "--", "true"},
	} {
		root := NewRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append([]string{"work"}, args...))
		err := root.Execute()
		require.ErrorContains(t, err, want, "tether work %v", args)
		require.Equal(t, 2, exitCode(err), "a usage error: %v", err)
	}

	t.Setenv("TETHER_TOKEN", "")
	root := NewRoot()
	root.SetArgs([]string{"work", "--queue", "q", "--", "true"})
	err := root.Execute()
	require.ErrorContains(t, err, "TETHER_TOKEN is empty")
	require.Equal(t, 2, exitCode(err))
}
