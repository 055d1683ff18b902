package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) tenantCommand() *cobra.Command {
	return groupCommand("tenant", "Your tenant and its policy",
		groupCommand("policy", "Show or change the tenant's policy (lease TTLs, attempts, caps)",
			c.policyGetCommand(), c.policySetCommand()))
}

func (c *cli) policyGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get",
		Short: "Show the tenant and its policy",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(c, cmd, func(api *apiClient) (*client.GetTenantResponse, error) {
				return api.GetTenantWithResponse(cmd.Context())
			}, func(w io.Writer, res *client.GetTenantResponse) {
				fmt.Fprintf(w, "tenant:\t%s\n", res.JSON200.ID)
				showPolicy(w, res.JSON200.Policy)
			})
		},
	}
}

func showPolicy(w io.Writer, p client.Policy) {
	ttl := func(ms int64) string {
		return fmt.Sprintf("%d (%s)", ms, humanDuration(time.Duration(ms)*time.Millisecond))
	}
	capped := func(v string, zero bool) string {
		if zero {
			return v + " (no cap)"
		}
		return v
	}
	fmt.Fprintf(w, "claim_ttl_default_ms:\t%s\n", ttl(p.ClaimTTLDefaultMS))
	fmt.Fprintf(w, "claim_ttl_max_ms:\t%s\n", ttl(p.ClaimTTLMaxMS))
	fmt.Fprintf(w, "max_attempts_default:\t%d\n", p.MaxAttemptsDefault)
	fmt.Fprintf(w, "max_leases_per_identity:\t%s\n", capped(fmt.Sprint(p.MaxLeasesPerIdentity), p.MaxLeasesPerIdentity == 0))
	fmt.Fprintf(w, "requests_per_second:\t%s\n", capped(fmt.Sprint(p.RequestsPerSecond), p.RequestsPerSecond == 0))
	fmt.Fprintf(w, "retry_initial_ms:\t%s\n", capped(ttl(p.RetryInitialMS), p.RetryInitialMS == 0))
	fmt.Fprintf(w, "retry_max_ms:\t%s\n", ttl(p.RetryMaxMS))
}

func (c *cli) policySetCommand() *cobra.Command {
	var ttlDefault, ttlMax, retryInitial, retryMax time.Duration
	var maxAttempts, maxLeases int64
	var rps float64
	var reset []string
	cmd := &cobra.Command{
		Use:   "set [--field value ...]",
		Short: "Change the tenant's policy (admin); --reset puts a field back to the server default",
		Example: `  tether tenant policy set --claim-ttl-default 10m --claim-ttl-max 4h
  tether tenant policy set --max-leases-per-identity 20 --reset requests_per_second`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var p client.PolicyPatch
			changed := false
			set := func(name string, apply func()) {
				if cmd.Flags().Changed(name) {
					apply()
					changed = true
				}
			}
			set("claim-ttl-default", func() { p.ClaimTTLDefaultMS = client.Value(millis(ttlDefault)) })
			set("claim-ttl-max", func() { p.ClaimTTLMaxMS = client.Value(millis(ttlMax)) })
			set("max-attempts-default", func() { p.MaxAttemptsDefault = client.Value(maxAttempts) })
			set("max-leases-per-identity", func() { p.MaxLeasesPerIdentity = client.Value(maxLeases) })
			set("requests-per-second", func() { p.RequestsPerSecond = client.Value(rps) })
			set("retry-initial", func() { p.RetryInitialMS = client.Value(millis(retryInitial)) })
			set("retry-max", func() { p.RetryMaxMS = client.Value(millis(retryMax)) })
			for _, name := range reset {
				if err := resetPolicyField(&p, name); err != nil {
					return err
				}
				changed = true
			}
			if !changed {
				return usageErrorf("nothing to change: give a field flag or --reset")
			}
			return call(c, cmd, func(api *apiClient) (*client.PatchTenantPolicyResponse, error) {
				return api.PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(cmd.Context(), p)
			}, func(w io.Writer, res *client.PatchTenantPolicyResponse) { showPolicy(w, *res.JSON200) })
		},
	}
	f := cmd.Flags()
	f.DurationVar(&ttlDefault, "claim-ttl-default", 0, "the TTL of a claim that names none, e.g. 5m")
	f.DurationVar(&ttlMax, "claim-ttl-max", 0, "the longest a claim or extension may reach, e.g. 2h")
	f.Int64Var(&maxAttempts, "max-attempts-default", 0, "max_attempts of a node that names none")
	f.Int64Var(&maxLeases, "max-leases-per-identity", 0, "live leases one identity may hold (0: no cap)")
	f.Float64Var(&rps, "requests-per-second", 0, "per identity, with a burst of twice that (0: no cap)")
	f.DurationVar(&retryInitial, "retry-initial", 0, "the default retry backoff: the first retry waits about this long, each next one twice as long (0: at once)")
	f.DurationVar(&retryMax, "retry-max", 0, "the longest default retry backoff, e.g. 10m")
	f.StringSliceVar(&reset, "reset", nil, "put a field back to the server default (repeatable), e.g. claim_ttl_max_ms")
	return cmd
}

// resetPolicyField sets the field name (claim_ttl_max_ms, claim-ttl-max, ...)
// of p to null, which the server reads as "its default".
func resetPolicyField(p *client.PolicyPatch, name string) error {
	switch strings.TrimSuffix(strings.ReplaceAll(name, "-", "_"), "_ms") {
	case "claim_ttl_default":
		p.ClaimTTLDefaultMS = client.Null[int64]()
	case "claim_ttl_max":
		p.ClaimTTLMaxMS = client.Null[int64]()
	case "max_attempts_default":
		p.MaxAttemptsDefault = client.Null[int64]()
	case "max_leases_per_identity":
		p.MaxLeasesPerIdentity = client.Null[int64]()
	case "requests_per_second":
		p.RequestsPerSecond = client.Null[float64]()
	case "retry_initial":
		p.RetryInitialMS = client.Null[int64]()
	case "retry_max":
		p.RetryMaxMS = client.Null[int64]()
	default:
		return usageErrorf("--reset %q: not a policy field (claim_ttl_default_ms, claim_ttl_max_ms, "+
			"max_attempts_default, max_leases_per_identity, requests_per_second, retry_initial_ms, retry_max_ms)", name)
	}
	return nil
}
