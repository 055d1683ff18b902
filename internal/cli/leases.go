package cli

// The lease verbs: claim, renew, extend, release, complete, fail <id>.

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) leaseCommands() []*cobra.Command {
	return []*cobra.Command{c.claimCommand(), c.renewCommand(), c.extendCommand(),
		c.releaseCommand(), c.completeCommand(), c.failCommand()}
}

// holderFlags are the flags of an act on a lease the caller holds.
type holderFlags struct {
	fence   int64
	session string
}

func (h *holderFlags) flags(cmd *cobra.Command) {
	cmd.Flags().Int64Var(&h.fence, "fence", 0, "act only if this is still the lease with this fence")
	cmd.Flags().StringVar(&h.session, "session", "", "the run the lease is scoped to")
}

func (h *holderFlags) fenceArg(cmd *cobra.Command) *int64    { return ifSet(cmd, "fence", h.fence) }
func (h *holderFlags) sessionArg(cmd *cobra.Command) *string { return ifSet(cmd, "session", h.session) }

// leaseLine is one line on a lease for people.
func leaseLine(w io.Writer, what string, l client.Lease, capped *int64) {
	fmt.Fprintf(w, "%s %s by %s: fence %d, expires %s (%s)", l.NodeID, what, l.By, l.Fence, relative(l.ExpiresAt), stamp(l.ExpiresAt))
	if capped != nil {
		fmt.Fprintf(w, "; capped to the tenant's maximum of %s", humanDuration(time.Duration(*capped)*time.Millisecond))
	}
	fmt.Fprintln(w)
}

func (c *cli) claimCommand() *cobra.Command {
	var ttl time.Duration
	var session string
	cmd := &cobra.Command{
		Use:   "claim <id>",
		Short: "Claim a node: a lease for --ttl, renewed with `tether renew`",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return call(c, cmd, func(api *apiClient) (*client.ClaimNodeResponse, error) {
				return api.ClaimNodeWithResponse(cmd.Context(), a[0], client.ClaimRequest{
					TTLMS: ifSet(cmd, "ttl", millis(ttl)), Session: ifSet(cmd, "session", session),
				})
			}, func(w io.Writer, res *client.ClaimNodeResponse) { claimLine(w, res.JSON200) })
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "lease TTL (default: the tenant's, 5m unless set)")
	cmd.Flags().StringVar(&session, "session", "", "scope the lease to one run")
	return cmd
}

func claimLine(w io.Writer, r *client.ClaimResponse) {
	what := "claimed"
	if r.Renewed {
		what = "renewed (already held)"
	}
	var capped *int64
	if r.CappedToMax != nil && *r.CappedToMax {
		capped = r.ClaimTTLMaxMS
	}
	leaseLine(w, what, r.Lease, capped)
}

func (c *cli) renewCommand() *cobra.Command {
	var h holderFlags
	cmd := &cobra.Command{
		Use:   "renew <id>",
		Short: "Renew a lease you hold for its TTL from now",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return call(c, cmd, func(api *apiClient) (*client.RenewLeaseResponse, error) {
				return api.RenewLeaseWithResponse(cmd.Context(), a[0], client.RenewRequest{Fence: h.fenceArg(cmd), Session: h.sessionArg(cmd)})
			}, func(w io.Writer, res *client.RenewLeaseResponse) {
				leaseLine(w, "renewed", res.JSON200.Lease, nil)
				if n := res.JSON200.InboxUnread; n > 0 {
					fmt.Fprintf(w, "%d unread message(s) in your inbox\n", n)
				}
			})
		},
	}
	h.flags(cmd)
	return cmd
}

func (c *cli) extendCommand() *cobra.Command {
	var h holderFlags
	var by time.Duration
	cmd := &cobra.Command{
		Use:     "extend <id> DURATION",
		Short:   "Push a lease's expiry out, for a long step (capped at the tenant's maximum)",
		Example: "  tether extend task-1 30m --fence 3      # or --by 30m",
		Args:    usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 2 {
				if cmd.Flags().Changed("by") {
					return usageErrorf("give the duration once: as an argument or as --by")
				}
				d, err := time.ParseDuration(a[1])
				if err != nil {
					return usageErrorf("%q is not a duration, like 30m or 1h", a[1])
				}
				by = d
			}
			if by <= 0 {
				return usageErrorf("the duration must be positive, like 1h (tether extend <id> 1h)")
			}
			return call(c, cmd, func(api *apiClient) (*client.ExtendLeaseResponse, error) {
				return api.ExtendLeaseWithResponse(cmd.Context(), a[0], client.ExtendRequest{MS: millis(by), Fence: h.fenceArg(cmd), Session: h.sessionArg(cmd)})
			}, func(w io.Writer, res *client.ExtendLeaseResponse) {
				var capped *int64
				if r := res.JSON200; r.CappedToMax != nil && *r.CappedToMax {
					capped = r.ClaimTTLMaxMS
				}
				leaseLine(w, "extended", res.JSON200.Lease, capped)
			})
		},
	}
	cmd.Flags().DurationVar(&by, "by", 0, "how much longer, e.g. 1h (the same as the DURATION argument)")
	h.flags(cmd)
	return cmd
}

func (c *cli) releaseCommand() *cobra.Command {
	var h holderFlags
	var reason, to string
	cmd := &cobra.Command{
		Use:   "release <id>",
		Short: "Give a node back to its queue (the attempt is not counted), or hand it --to someone",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return call(c, cmd, func(api *apiClient) (*client.ReleaseNodeResponse, error) {
				return api.ReleaseNodeWithResponse(cmd.Context(), a[0], client.ReleaseRequest{
					Reason: ifSet(cmd, "reason", reason), To: ifSet(cmd, "to", to), Fence: h.fenceArg(cmd), Session: h.sessionArg(cmd),
				})
			}, func(w io.Writer, res *client.ReleaseNodeResponse) {
				fmt.Fprintf(w, "%s released: %s\n", a[0], res.JSON200.Status)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the record")
	cmd.Flags().StringVar(&to, "to", "", "hand the node off to this identity: only it may claim it next")
	h.flags(cmd)
	return cmd
}

func (c *cli) completeCommand() *cobra.Command {
	var h holderFlags
	var result, resultString string
	var usage map[string]string
	cmd := &cobra.Command{
		Use:     "complete <id>",
		Short:   "Complete a node you hold: done",
		Example: `  tether complete task-1 --fence 3 --result '{"pr": 42}' --usage tokens=1200,cost=0.04`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			body := client.CompleteRequest{Fence: h.fenceArg(cmd), Session: h.sessionArg(cmd)}
			switch {
			case cmd.Flags().Changed("result") && cmd.Flags().Changed("result-string"):
				return usageErrorf("give --result (JSON) or --result-string (text), not both")
			case cmd.Flags().Changed("result"):
				var v any
				if err := json.Unmarshal([]byte(result), &v); err != nil {
					return usageErrorf("--result is not valid JSON (%v); to store text, use --result-string", err)
				}
				body.Result = v
			case cmd.Flags().Changed("result-string"):
				body.Result = resultString
			}
			if len(usage) > 0 {
				u := client.Usage{}
				for k, v := range usage {
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						return usageErrorf("--usage %s=%s: not a number", k, v)
					}
					u[k] = f
				}
				body.Usage = &u
			}
			return call(c, cmd, func(api *apiClient) (*client.CompleteNodeResponse, error) {
				return api.CompleteNodeWithResponse(cmd.Context(), a[0], body)
			}, func(w io.Writer, res *client.CompleteNodeResponse) {
				fmt.Fprintf(w, "%s %s\n", a[0], res.JSON200.Status)
			})
		},
	}
	cmd.Flags().StringVar(&result, "result", "", `the result, a JSON value: '{"pr": 42}', '"text"', 42 (invalid JSON is refused)`)
	cmd.Flags().StringVar(&resultString, "result-string", "", "the result as text, stored as a JSON string")
	cmd.Flags().StringToStringVar(&usage, "usage", nil, "counters to record, name=number (e.g. tokens=1200,cost=0.04)")
	h.flags(cmd)
	return cmd
}

func (c *cli) failCommand() *cobra.Command {
	var h holderFlags
	var reason string
	var noRequeue bool
	var retryIn time.Duration
	cmd := &cobra.Command{
		Use:   "fail <id> --error REASON",
		Short: "Fail a run: back to the queue while attempts remain (else dead), or failed with --no-requeue",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if reason == "" {
				return usageErrorf("--error is required: say why the run failed")
			}
			body := client.FailRequest{Error: reason, Fence: h.fenceArg(cmd), Session: h.sessionArg(cmd), RetryInMS: ifSet(cmd, "retry-in", millis(retryIn))}
			if noRequeue {
				body.Requeue = new(bool)
			}
			return call(c, cmd, func(api *apiClient) (*client.FailNodeResponse, error) {
				return api.FailNodeWithResponse(cmd.Context(), a[0], body)
			}, func(w io.Writer, res *client.FailNodeResponse) {
				n := res.JSON200.Node
				fmt.Fprintf(w, "%s failed: now %s (attempt %d of %d)", n.ID, n.Status, n.Attempts, n.MaxAttempts)
				if n.RunAt != nil && n.RunAt.After(time.Now()) {
					fmt.Fprintf(w, ", retry %s", relative(*n.RunAt))
				}
				fmt.Fprintln(w)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "error", "", "why the run failed (required)")
	cmd.Flags().BoolVar(&noRequeue, "no-requeue", false, "end the node failed instead of retrying it")
	cmd.Flags().DurationVar(&retryIn, "retry-in", 0, "delay before the retry (default: the node's backoff)")
	h.flags(cmd)
	return cmd
}
