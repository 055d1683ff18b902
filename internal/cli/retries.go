package cli

import (
	"github.com/spf13/pflag"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/envflag"
)

// defaultRetries is how many times a call is sent again by default: the Go
// client's default of four tries in all.
const defaultRetries = client.DefaultRetryMaxAttempts - 1

// maxRetries bounds --retries: a call that failed this often is failing.
const maxRetries = 20

// retriesUnset is the flag's value when it was not given.
const retriesUnset = -1

// addRetriesFlag adds --retries to f, stored in n.
func addRetriesFlag(f *pflag.FlagSet, n *int) {
	f.IntVar(n, "retries", retriesUnset,
		"how many times a call that may succeed later (503, 429, no connection) is sent again, when that is safe; 0 turns retries off (TETHER_RETRIES, default 3)")
}

// retryPolicy is the client's retry policy for --retries n, or for
// TETHER_RETRIES when the flag was not given.
func retryPolicy(n int) (client.RetryPolicy, error) {
	if n == retriesUnset {
		v, err := envflag.Int("TETHER_RETRIES", defaultRetries)
		if err != nil {
			return client.RetryPolicy{}, usageErrorf("%v", err)
		}
		n = int(min(v, maxRetries+1))
	}
	if n < 0 || n > maxRetries {
		return client.RetryPolicy{}, usageErrorf("--retries (or TETHER_RETRIES) must be from 0 to %d", maxRetries)
	}
	return client.RetryPolicy{MaxAttempts: n + 1}, nil
}

// retryOption is retryPolicy as a client option.
func (c *cli) retryOption() (client.ClientOption, error) {
	p, err := retryPolicy(c.retries)
	if err != nil {
		return nil, err
	}
	return client.WithRetries(p), nil
}
