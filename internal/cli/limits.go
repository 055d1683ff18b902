package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

// tether limits: flow control at claim time. Limits and start rates on
// concurrency keys (or key prefixes), usage budgets, and a queue's own flow
// settings. Without a verb it lists the limits.
func (c *cli) limitsCommand() *cobra.Command {
	list := c.limitsListCommand()
	cmd := &cobra.Command{
		Use:   "limits",
		Short: "List, set and remove concurrency limits, start rates and usage budgets",
		Long: `Flow control at claim time. A node carries up to 8 concurrency keys
(--concurrency-key on create); a limit on a key (or on a prefix such as
"repo:*", which limits each matching key on its own) caps how many of its
nodes run at once, a rate caps how fast they start, and a budget caps the
usage (tokens, cost_usd, ...) their runs report in a window. A claim that
would cross one is refused; claim-next skips the node.
Without a verb: the limits, as "tether limits ls".`,
		Example: `  tether limits set 'repo:*' --max-running 1
  tether limits set provider:openai --rate 20/s --burst 40
  tether limits
  tether limits rm 'repo:*'
  tether limits budget set provider:openai --usage tokens --limit 100000 --window 1h
  tether limits budgets
  tether limits queue fixes --max-running-per-key 2 --rate 5/s --burst 10`,
		Args: usageArgs(cobra.NoArgs),
		RunE: list.RunE,
	}
	cmd.Flags().AddFlagSet(list.Flags())
	budgets := c.budgetsListCommand()
	budgets.Use, budgets.Aliases = "budgets", nil
	cmd.AddCommand(list, c.limitSetCommand(), c.limitRemoveCommand(), budgets,
		groupCommand("budget", "Set and remove usage budgets", c.budgetsListCommand(), c.budgetSetCommand(), c.budgetRemoveCommand()),
		c.queueFlowCommand())
	return cmd
}

func (c *cli) limitsListCommand() *cobra.Command {
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "The limits and start rates, by key, with what runs under each now",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := ask(c, func(api *apiClient) (*client.ListLimitsResponse, error) {
				return api.ListLimitsWithResponse(cmd.Context(), &client.ListLimitsParams{
					Limit: ifSet(cmd, "limit", limit), Cursor: ifSet(cmd, "cursor", cursor)})
			})
			if err != nil {
				return err
			}
			nextPage(cmd, res.JSON200.NextCursor, "--cursor")
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) {
				fmt.Fprintln(w, "KEY\tMAX_RUNNING\tRUNNING\tRATE")
				for _, l := range res.JSON200.Items {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", l.Key, countOrDash(l.MaxRunning), limitRunning(l), rateText(l.Rate))
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "page size (at most 1000)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the next page, as printed after the previous one")
	return cmd
}

// limitRunning is what runs under a limit: for a prefix, the busiest
// matching key's count and how many keys run at all.
func limitRunning(l client.ConcurrencyLimit) string {
	if l.RunningKeys != nil {
		return fmt.Sprintf("%d (busiest of %d keys)", l.Running, *l.RunningKeys)
	}
	return strconv.FormatInt(l.Running, 10)
}

func countOrDash(n *int64) string {
	if n == nil || *n == 0 {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

// rateText is a start rate as people write it: "5/s, burst 10".
func rateText(r *client.Rate) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%s/s, burst %d", strconv.FormatFloat(r.PerSecond, 'g', -1, 64), r.Burst)
}

// rateFlags are --rate and --burst, which make a start rate together.
type rateFlags struct {
	rate  string
	burst int64
}

func (r *rateFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.rate, "rate", "", `a start rate: grants a second ("5/s", "5"), a minute ("30/m") or an hour ("100/h")`)
	cmd.Flags().Int64Var(&r.burst, "burst", 0, "the most grants at once (default: the rate a second, rounded up, at least 1)")
}

// value is the Rate the flags give; nil when neither was given.
func (r *rateFlags) value(cmd *cobra.Command) (*client.Rate, error) {
	changed := cmd.Flags().Changed
	if !changed("rate") {
		if changed("burst") {
			return nil, usageErrorf("--burst goes with --rate")
		}
		return nil, nil
	}
	perSecond, err := parseRate(r.rate)
	if err != nil {
		return nil, err
	}
	burst := r.burst
	if !changed("burst") {
		burst = max(int64(math.Ceil(perSecond)), 1)
	}
	return &client.Rate{PerSecond: perSecond, Burst: burst}, nil
}

// parseRate reads "5/s", "5", "30/m" or "100/h" as grants a second. Range
// checks are the server's (a 400 naming the field).
func parseRate(v string) (float64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(v), "/")
	per := map[string]float64{"": 1, "s": 1, "m": 60, "min": 60, "h": 3600}[unit]
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || per == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, usageErrorf("--rate takes grants per second, minute or hour, such as 5/s, 30/m or 100/h, not %q", v)
	}
	return n / per, nil
}

func (c *cli) limitSetCommand() *cobra.Command {
	var maxRunning int64
	var rate rateFlags
	cmd := &cobra.Command{
		Use:   "set <key> [--max-running N] [--rate R/s --burst N]",
		Short: "Set a key's (or a prefix's, 'repo:*') limit on running nodes and its start rate",
		Long: `Set a key's limit on running nodes (--max-running) and start rate (--rate,
--burst). What is given replaces what the key had: a limit set without
--rate has no rate. A key ending in * is a prefix: the limit holds for each
matching key on its own.`,
		Example: `  tether limits set 'repo:*' --max-running 1
  tether limits set provider:openai --max-running 8 --rate 20/s --burst 40`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			r, err := rate.value(cmd)
			if err != nil {
				return err
			}
			body := client.ConcurrencyLimitPut{MaxRunning: ifSet(cmd, "max-running", maxRunning), Rate: r}
			if body.MaxRunning == nil && body.Rate == nil {
				return usageErrorf("give --max-running, --rate or both")
			}
			return call(c, cmd, func(api *apiClient) (*client.PutLimitResponse, error) {
				return api.PutLimitWithResponse(cmd.Context(), a[0], body)
			}, func(w io.Writer, res *client.PutLimitResponse) {
				l := res.JSON200
				fmt.Fprintf(w, "%s: max running %s, rate %s, running %s\n", l.Key, countOrDash(l.MaxRunning), rateText(l.Rate), limitRunning(*l))
			})
		},
	}
	cmd.Flags().Int64Var(&maxRunning, "max-running", 0, "at most this many running nodes carrying the key at once")
	rate.add(cmd)
	return cmd
}

func (c *cli) limitRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "rm <key>",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove a key's limit and start rate",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return call(c, cmd, func(api *apiClient) (*client.DeleteLimitResponse, error) {
				return api.DeleteLimitWithResponse(cmd.Context(), a[0])
			}, func(w io.Writer, _ *client.DeleteLimitResponse) { fmt.Fprintf(w, "removed the limit of %s\n", a[0]) })
		},
	}
}

func (c *cli) budgetsListCommand() *cobra.Command {
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "The usage budgets, by key, with what was spent in the current window",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := ask(c, func(api *apiClient) (*client.ListBudgetsResponse, error) {
				return api.ListBudgetsWithResponse(cmd.Context(), &client.ListBudgetsParams{
					Limit: ifSet(cmd, "limit", limit), Cursor: ifSet(cmd, "cursor", cursor)})
			})
			if err != nil {
				return err
			}
			nextPage(cmd, res.JSON200.NextCursor, "--cursor")
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) {
				fmt.Fprintln(w, "KEY\tUSAGE\tSPENT\tLIMIT\tWINDOW\tROLLS_OVER\tEXHAUSTED")
				for _, b := range res.JSON200.Items {
					fmt.Fprintf(w, "%s\t%s\t%g\t%g\t%s\t%s\t%s\n", b.Key, b.Usage, b.Spent, b.Limit,
						humanDuration(time.Duration(b.WindowMS)*time.Millisecond), relative(b.WindowEnd), yesNo(b.Exhausted))
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "page size (at most 1000)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the next page, as printed after the previous one")
	return cmd
}

func (c *cli) budgetSetCommand() *cobra.Command {
	var usage string
	var limit float64
	var window time.Duration
	cmd := &cobra.Command{
		Use:   "set <key> --usage COUNTER --limit N --window DURATION",
		Short: "Set a key's usage budget: at most --limit of --usage per --window",
		Long: `Set a key's usage budget: at most --limit of the usage counter --usage
(as progress and complete report it: tokens, cost_usd or one of your own)
spent by runs of nodes carrying the key in each --window. Once spent,
claims of such nodes wait for the next window; running work goes on.`,
		Example: `  tether limits budget set provider:openai --usage tokens --limit 100000 --window 1h
  tether limits budget set team:research --usage cost_usd --limit 25 --window 24h`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			for _, f := range []string{"usage", "limit", "window"} {
				if !cmd.Flags().Changed(f) {
					return usageErrorf("--usage, --limit and --window are required")
				}
			}
			body := client.BudgetPut{Usage: usage, Limit: limit, WindowMS: millis(window)}
			return call(c, cmd, func(api *apiClient) (*client.PutBudgetResponse, error) {
				return api.PutBudgetWithResponse(cmd.Context(), a[0], body)
			}, func(w io.Writer, res *client.PutBudgetResponse) {
				b := res.JSON200
				fmt.Fprintf(w, "%s: %g of %g %s spent this %s window (rolls over %s)\n", b.Key, b.Spent, b.Limit, b.Usage,
					humanDuration(time.Duration(b.WindowMS)*time.Millisecond), relative(b.WindowEnd))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&usage, "usage", "", "the usage counter spent: tokens, cost_usd, or one of your own")
	f.Float64Var(&limit, "limit", 0, "the most of it spent in one window")
	f.DurationVar(&window, "window", 0, "the window's length, such as 1h or 24h")
	return cmd
}

func (c *cli) budgetRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "rm <key>",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove a key's usage budget",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return call(c, cmd, func(api *apiClient) (*client.DeleteBudgetResponse, error) {
				return api.DeleteBudgetWithResponse(cmd.Context(), a[0])
			}, func(w io.Writer, _ *client.DeleteBudgetResponse) { fmt.Fprintf(w, "removed the budget of %s\n", a[0]) })
		},
	}
}

// queueFlowCommand changes a queue's own flow settings (PATCH
// /v1/queues/{queue}), leaving alone what it is not given.
func (c *cli) queueFlowCommand() *cobra.Command {
	var perKey, maxRunning int64
	var fair, noRate bool
	var age time.Duration
	var rate rateFlags
	cmd := &cobra.Command{
		Use:   "queue <queue> [flags]",
		Short: "Change a queue's flow settings: per-key default, fair share, aging, start rate",
		Example: `  tether limits queue fixes --max-running-per-key 2
  tether limits queue fixes --rate 5/s --burst 10
  tether limits queue fixes --no-rate`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			r, err := rate.value(cmd)
			if err != nil {
				return err
			}
			p := client.QueuePatch{
				MaxRunning: ifSet(cmd, "max-running", maxRunning), MaxRunningPerKey: ifSet(cmd, "max-running-per-key", perKey),
				Fair: ifSet(cmd, "fair", fair), AgePriorityEveryMS: ifSet(cmd, "age-every", millis(age)),
			}
			switch {
			case r != nil && noRate:
				return usageErrorf("--rate and --no-rate exclude each other")
			case r != nil:
				p.Rate = client.Value(*r)
			case noRate:
				p.Rate = client.Null[client.Rate]()
			}
			if p == (client.QueuePatch{}) {
				return usageErrorf("give at least one setting to change")
			}
			return call(c, cmd, func(api *apiClient) (*client.UpdateQueueResponse, error) {
				return api.UpdateQueueWithResponse(cmd.Context(), a[0], p)
			}, func(w io.Writer, res *client.UpdateQueueResponse) { showQueueFlow(w, res.JSON200) })
		},
	}
	f := cmd.Flags()
	f.Int64Var(&maxRunning, "max-running", 0, "at most this many running nodes in the queue (0 removes the cap)")
	f.Int64Var(&perKey, "max-running-per-key", 0, "the limit of each concurrency key without a limit of its own (0 removes it)")
	f.BoolVar(&fair, "fair", false, "take from the ready nodes' keys in turn within a priority band (--fair=false turns it off)")
	f.DurationVar(&age, "age-every", 0, "a ready node counts one priority band higher per this long waited (0 turns aging off)")
	f.BoolVar(&noRate, "no-rate", false, "remove the queue's start rate")
	rate.add(cmd)
	return cmd
}

// showQueueFlow writes a queue's flow settings as "field: value" lines.
func showQueueFlow(w io.Writer, q *client.Queue) {
	row := func(k, v string) { fmt.Fprintf(w, "%s:\t%s\n", k, v) }
	row("queue", q.Queue)
	row("max_running", countOrDash(&q.MaxRunning))
	row("max_running_per_key", countOrDash(q.MaxRunningPerKey))
	row("fair", yesNo(q.Fair != nil && *q.Fair))
	aging := "-"
	if q.AgePriorityEveryMS != nil && *q.AgePriorityEveryMS > 0 {
		aging = "one band per " + humanDuration(time.Duration(*q.AgePriorityEveryMS)*time.Millisecond)
	}
	row("aging", aging)
	row("rate", rateText(q.Rate))
}
