package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) scheduleCommand() *cobra.Command {
	cmd := groupCommand("schedule", "Create, list, change, pause, resume, trigger and delete schedules; show their runs",
		c.scheduleCreateCommand(), c.scheduleListCommand(), c.scheduleGetCommand(), c.scheduleUpdateCommand(),
		c.scheduleDeleteCommand(), c.schedulePauseCommand(true), c.schedulePauseCommand(false),
		c.scheduleTriggerCommand(), c.scheduleRunsCommand())
	cmd.Aliases = []string{"schedules"}
	return cmd
}

// scheduleFlags are the settings create and update share.
type scheduleFlags struct {
	cron, at, timezone, template, chain, overlap, catchup string
	window, jitter                                        time.Duration
	backoff                                               []string
}

func (s *scheduleFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.cron, "cron", "", `when it fires: "*/5 * * * *", six fields with seconds first, @hourly, @daily, "@every 90s"`)
	f.StringVar(&s.at, "at", "", "a one-shot schedule's instant (RFC 3339); it removes itself after its run")
	f.StringVar(&s.timezone, "timezone", "", "the IANA time zone cron is read in (default UTC), e.g. Europe/Berlin")
	f.StringVar(&s.template, "template", "", `the node each fire creates, a JSON object such as '{"type": "report", "queue": "default"}'`)
	f.StringVar(&s.chain, "chain", "", "follow-up nodes, a JSON array of templates: each runs after the one before")
	f.StringVar(&s.overlap, "overlap", "", "while the last run is not over: skip (default), queue, allow, buffer_one, cancel_other")
	f.StringVar(&s.catchup, "catchup", "", "after downtime, run the missed fires once (one, the default) or each (all)")
	f.DurationVar(&s.window, "catchup-window", 0, "how late a missed fire may still run (default 1m)")
	f.DurationVar(&s.jitter, "jitter", 0, "delay each fire by up to this much")
	f.StringSliceVar(&s.backoff, "backoff", nil, `the failure backoff ladder, e.g. 30s,1m,5m ("none" for no backoff; default 30s,1m,5m,15m,60m)`)
}

func (s *scheduleFlags) atTime() (*time.Time, error) {
	t, err := time.Parse(time.RFC3339, s.at)
	if err != nil {
		return nil, usageErrorf("--at must be an RFC 3339 time such as 2026-05-01T09:00:00Z")
	}
	return &t, nil
}

func (s *scheduleFlags) backoffMS() ([]int64, error) {
	out := []int64{}
	if len(s.backoff) == 1 && s.backoff[0] == "none" {
		return out, nil
	}
	for _, v := range s.backoff {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, usageErrorf("--backoff takes durations such as 30s,1m,5m, not %q", v)
		}
		out = append(out, millis(d))
	}
	return out, nil
}

func parseTemplate(flag, raw string) (client.ScheduleNode, error) {
	var n client.ScheduleNode
	if err := json.Unmarshal([]byte(raw), &n); err != nil {
		return n, usageErrorf("--%s must be a JSON object such as '{\"type\": \"report\"}': %v", flag, err)
	}
	return n, nil
}

func parseChain(raw string) ([]client.ScheduleNode, error) {
	var chain []client.ScheduleNode
	if err := json.Unmarshal([]byte(raw), &chain); err != nil {
		return nil, usageErrorf("--chain must be a JSON array of templates: %v", err)
	}
	return chain, nil
}

func (c *cli) scheduleCreateCommand() *cobra.Command {
	var s scheduleFlags
	var id, typ, queue, title string
	var paused bool
	cmd := &cobra.Command{
		Use:   "create (--cron EXPR | --at TIME) (--type TYPE | --template JSON) [flags]",
		Short: "Create a schedule: a node (and its chain) made from a template at every fire",
		Example: `  tether schedule create --id nightly --cron "0 2 * * *" --timezone Europe/Berlin --type report --queue default
  tether schedule create --cron "@every 90s" --template '{"type": "poll", "queue": "default", "max_attempts": 1}' --overlap skip
  tether schedule create --at 2026-05-01T09:00:00Z --type launch --queue default`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			body := client.ScheduleCreate{ID: ifSet(cmd, "id", id), Cron: ifSet(cmd, "cron", s.cron), Timezone: ifSet(cmd, "timezone", s.timezone)}
			switch {
			case cmd.Flags().Changed("template"):
				t, err := parseTemplate("template", s.template)
				if err != nil {
					return err
				}
				body.Template = t
			case typ != "":
				body.Template = client.ScheduleNode{Type: typ, Queue: ifSet(cmd, "queue", queue), Title: ifSet(cmd, "title", title)}
			default:
				return usageErrorf("--type or --template is required")
			}
			if err := s.fill(cmd, &body.At, &body.Chain, &body.Overlap, &body.Catchup, &body.CatchupWindowMS, &body.JitterMS, &body.BackoffMS); err != nil {
				return err
			}
			if paused {
				body.Enabled = ptrTo(false)
			}
			return call(c, cmd, func(api *apiClient) (*client.CreateScheduleResponse, error) {
				return api.CreateScheduleWithResponse(cmd.Context(), body)
			}, func(w io.Writer, res *client.CreateScheduleResponse) { showSchedule(w, res.JSON201) })
		},
	}
	s.add(cmd)
	f := cmd.Flags()
	f.StringVar(&id, "id", "", "the schedule's id (default: a UUIDv7 made by the server)")
	f.StringVar(&typ, "type", "", "the type of the node each fire creates (or give --template)")
	f.StringVar(&queue, "queue", "", "the queue of the node each fire creates (with --type)")
	f.StringVar(&title, "title", "", "the title of the node each fire creates (with --type)")
	f.BoolVar(&paused, "paused", false, "create it paused")
	return cmd
}

// fill sets the members of a create body that the shared flags give.
func (s *scheduleFlags) fill(cmd *cobra.Command, at **time.Time, chain **[]client.ScheduleNode, overlap **client.ScheduleOverlap,
	catchup **client.ScheduleCatchup, window, jitter **int64, backoff **[]int64) error {
	changed := cmd.Flags().Changed
	if changed("at") {
		t, err := s.atTime()
		if err != nil {
			return err
		}
		*at = t
	}
	if changed("chain") {
		ch, err := parseChain(s.chain)
		if err != nil {
			return err
		}
		*chain = &ch
	}
	if changed("overlap") {
		o := client.ScheduleOverlap(s.overlap)
		*overlap = &o
	}
	if changed("catchup") {
		v := client.ScheduleCatchup(s.catchup)
		*catchup = &v
	}
	*window, *jitter = ifSet(cmd, "catchup-window", millis(s.window)), ifSet(cmd, "jitter", millis(s.jitter))
	if changed("backoff") {
		b, err := s.backoffMS()
		if err != nil {
			return err
		}
		*backoff = &b
	}
	return nil
}

func (c *cli) scheduleListCommand() *cobra.Command {
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the schedules, in id order",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := ask(c, func(api *apiClient) (*client.ListSchedulesResponse, error) {
				return api.ListSchedulesWithResponse(cmd.Context(), &client.ListSchedulesParams{
					Limit: ifSet(cmd, "limit", limit), Cursor: ifSet(cmd, "cursor", cursor)})
			})
			if err != nil {
				return err
			}
			nextPage(cmd, res.JSON200.NextCursor, "--cursor")
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) {
				fmt.Fprintln(w, "ID\tWHEN\tTIMEZONE\tENABLED\tOVERLAP\tNEXT\tFAILURES\tTYPE")
				for _, s := range res.JSON200.Items {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, scheduleWhen(&s), s.Timezone, yesNo(s.Enabled),
						s.Overlap, relativeOrDash(s.NextFireAt), s.ConsecutiveFailures, s.Template.Type)
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "page size (at most 1000)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the next page, as printed after the previous one")
	return cmd
}

func scheduleWhen(s *client.Schedule) string {
	if s.Cron != nil {
		return *s.Cron
	}
	if s.At != nil {
		return "at " + stamp(*s.At)
	}
	return "-"
}

func (c *cli) scheduleGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get <id>",
		Short: "Show a schedule with its next five fires",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return call(c, cmd, func(api *apiClient) (*client.GetScheduleResponse, error) {
				return api.GetScheduleWithResponse(cmd.Context(), a[0])
			}, func(w io.Writer, res *client.GetScheduleResponse) { showSchedule(w, res.JSON200) })
		},
	}
}

// showSchedule writes a schedule as "field: value" lines.
func showSchedule(w io.Writer, s *client.Schedule) {
	row := func(k, format string, v ...any) { fmt.Fprintf(w, "%s:\t%s\n", k, fmt.Sprintf(format, v...)) }
	row("id", "%s", s.ID)
	row("when", "%s (%s)", scheduleWhen(s), s.Timezone)
	state := "enabled"
	if !s.Enabled {
		state = "paused"
		if s.PausedBy != nil && s.PausedAt != nil {
			state += fmt.Sprintf(" by %s %s", *s.PausedBy, relative(*s.PausedAt))
		}
	}
	row("state", "%s", state)
	if s.Note != nil {
		row("note", "%s", *s.Note)
	}
	row("template", "%s", compactJSON(s.Template))
	if len(s.Chain) > 0 {
		row("chain", "%s", compactJSON(s.Chain))
	}
	row("overlap", "%s", s.Overlap)
	row("catchup", "%s within %s", s.Catchup, humanDuration(time.Duration(s.CatchupWindowMS)*time.Millisecond))
	if s.JitterMS > 0 {
		row("jitter", "%s", humanDuration(time.Duration(s.JitterMS)*time.Millisecond))
	}
	ladder := make([]string, len(s.BackoffMS))
	for i, b := range s.BackoffMS {
		ladder[i] = humanDuration(time.Duration(b) * time.Millisecond)
	}
	row("backoff", "%s", orDash(ptrTo(strings.Join(ladder, ", "))))
	if s.ConsecutiveFailures > 0 {
		row("failures", "%d in a row", s.ConsecutiveFailures)
	}
	if s.BackoffUntil != nil {
		row("backoff_until", "%s (%s)", stamp(*s.BackoffUntil), relative(*s.BackoffUntil))
	}
	if len(s.NextFires) == 0 {
		row("next", "-")
	}
	for i, f := range s.NextFires {
		k := ""
		if i == 0 {
			k = "next:"
		}
		fmt.Fprintf(w, "%s\t%s (%s)\n", k, stamp(f), relative(f))
	}
	row("version", "%d", s.Version)
	row("created", "%s by %s (%s)", stamp(s.CreatedAt), s.CreatedBy, relative(s.CreatedAt))
}

func (c *cli) scheduleUpdateCommand() *cobra.Command {
	var s scheduleFlags
	var enabled bool
	var clear []string
	cmd := &cobra.Command{
		Use:   "update <id> [flags]",
		Short: "Change a schedule's settings (a JSON merge patch; --template is merged)",
		Example: `  tether schedule update nightly --cron "30 2 * * *" --overlap queue
  tether schedule update nightly --template '{"priority": 5}' --clear jitter_ms`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			var p client.SchedulePatch
			changed := cmd.Flags().Changed
			if changed("cron") {
				p.Cron = client.Value(s.cron)
			}
			if changed("at") {
				t, err := s.atTime()
				if err != nil {
					return err
				}
				p.At = client.Value(*t)
			}
			if changed("timezone") {
				p.Timezone = client.Value(s.timezone)
			}
			if changed("template") {
				var m map[string]any
				if err := json.Unmarshal([]byte(s.template), &m); err != nil || m == nil {
					return usageErrorf("--template must be a JSON object (merged into the template)")
				}
				p.Template = &m
			}
			if changed("chain") {
				ch, err := parseChain(s.chain)
				if err != nil {
					return err
				}
				p.Chain = client.Value(ch)
			}
			if changed("overlap") {
				p.Overlap = client.Value(client.ScheduleOverlap(s.overlap))
			}
			if changed("catchup") {
				p.Catchup = client.Value(client.ScheduleCatchup(s.catchup))
			}
			if changed("catchup-window") {
				p.CatchupWindowMS = client.Value(millis(s.window))
			}
			if changed("jitter") {
				p.JitterMS = client.Value(millis(s.jitter))
			}
			if changed("backoff") {
				b, err := s.backoffMS()
				if err != nil {
					return err
				}
				p.BackoffMS = client.Value(b)
			}
			p.Enabled = ifSet(cmd, "enabled", enabled)
			for _, name := range clear {
				if err := clearScheduleMember(&p, name); err != nil {
					return err
				}
			}
			return call(c, cmd, func(api *apiClient) (*client.UpdateScheduleResponse, error) {
				return api.UpdateScheduleWithResponse(cmd.Context(), a[0], p)
			}, func(w io.Writer, res *client.UpdateScheduleResponse) { showSchedule(w, res.JSON200) })
		},
	}
	s.add(cmd)
	cmd.Flags().BoolVar(&enabled, "enabled", true, "enable (true) or pause (false) it; pause and resume also take a note")
	cmd.Flags().StringSliceVar(&clear, "clear", nil, "restore a setting's default: timezone, chain, overlap, catchup, catchup_window_ms, jitter_ms, backoff_ms")
	return cmd
}

// clearScheduleMember sets the member name of p to null (its default).
func clearScheduleMember(p *client.SchedulePatch, name string) error {
	switch strings.ReplaceAll(name, "-", "_") {
	case "timezone":
		p.Timezone = client.Null[string]()
	case "chain":
		p.Chain = client.Null[[]client.ScheduleNode]()
	case "overlap":
		p.Overlap = client.Null[client.ScheduleOverlap]()
	case "catchup":
		p.Catchup = client.Null[client.ScheduleCatchup]()
	case "catchup_window_ms", "catchup_window":
		p.CatchupWindowMS = client.Null[int64]()
	case "jitter_ms", "jitter":
		p.JitterMS = client.Null[int64]()
	case "backoff_ms", "backoff":
		p.BackoffMS = client.Null[[]int64]()
	default:
		return usageErrorf("--clear %q: a schedule update may clear only timezone, chain, overlap, catchup, catchup_window_ms, jitter_ms, backoff_ms", name)
	}
	return nil
}

func (c *cli) scheduleDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "delete <id>",
		Aliases: []string{"rm"},
		Short:   "Delete a schedule and its run history (the nodes its runs made stay)",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			_, err := ask(c, func(api *apiClient) (*client.DeleteScheduleResponse, error) {
				return api.DeleteScheduleWithResponse(cmd.Context(), a[0])
			})
			if err != nil {
				return err
			}
			if !c.json() {
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", a[0])
			}
			return nil
		},
	}
}

func (c *cli) schedulePauseCommand(pause bool) *cobra.Command {
	var note string
	verb, short := "resume", "Resume a paused schedule (its next fire is counted from now)"
	if pause {
		verb, short = "pause", "Pause a schedule: no fire is made until it is resumed"
	}
	cmd := &cobra.Command{
		Use:     verb + " <id> [--note TEXT]",
		Short:   short,
		Example: fmt.Sprintf("  tether schedule %s nightly --note \"the upstream API is down\"", verb),
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			body := client.ScheduleNote{Note: ifSet(cmd, "note", note)}
			var raw []byte
			var sched *client.Schedule
			if pause {
				r, err := ask(c, func(api *apiClient) (*client.PauseScheduleResponse, error) {
					return api.PauseScheduleWithResponse(cmd.Context(), a[0], body)
				})
				if err != nil {
					return err
				}
				raw, sched = r.Body, r.JSON200
			} else {
				r, err := ask(c, func(api *apiClient) (*client.ResumeScheduleResponse, error) {
					return api.ResumeScheduleWithResponse(cmd.Context(), a[0], body)
				})
				if err != nil {
					return err
				}
				raw, sched = r.Body, r.JSON200
			}
			return c.emit(cmd.OutOrStdout(), raw, func(w io.Writer) {
				fmt.Fprintf(w, "%sd %s", verb, a[0])
				if sched.NextFireAt != nil {
					fmt.Fprintf(w, ", next fire %s (%s)", stamp(*sched.NextFireAt), relative(*sched.NextFireAt))
				}
				fmt.Fprintln(w)
			})
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why (kept with the schedule)")
	return cmd
}

func (c *cli) scheduleTriggerCommand() *cobra.Command {
	var overlap string
	cmd := &cobra.Command{
		Use:   "trigger <id> [--overlap MODE]",
		Short: "Run a schedule now (paused or not; refused while the last run is not over, unless --overlap says otherwise)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			var body client.ScheduleTrigger
			if cmd.Flags().Changed("overlap") {
				o := client.ScheduleOverlap(overlap)
				body.Overlap = &o
			}
			return call(c, cmd, func(api *apiClient) (*client.TriggerScheduleResponse, error) {
				return api.TriggerScheduleWithResponse(cmd.Context(), a[0], body)
			}, func(w io.Writer, res *client.TriggerScheduleResponse) {
				fmt.Fprintf(w, "run %d of %s: %s\n", res.JSON201.Seq, a[0], strings.Join(res.JSON201.Nodes, " -> "))
			})
		},
	}
	cmd.Flags().StringVar(&overlap, "overlap", "", "this run's overlap policy: queue, allow, buffer_one, cancel_other (default: the schedule's)")
	return cmd
}

func (c *cli) scheduleRunsCommand() *cobra.Command {
	var limit int
	var cursor string
	cmd := &cobra.Command{
		Use:   "runs <id>",
		Short: "A schedule's runs, newest first, with status, attempts, duration and error",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			res, err := ask(c, func(api *apiClient) (*client.ListScheduleRunsResponse, error) {
				return api.ListScheduleRunsWithResponse(cmd.Context(), a[0], &client.ListScheduleRunsParams{
					Limit: ifSet(cmd, "limit", limit), Cursor: ifSet(cmd, "cursor", cursor)})
			})
			if err != nil {
				return err
			}
			nextPage(cmd, res.JSON200.NextCursor, "--cursor")
			return c.emit(cmd.OutOrStdout(), res.Body, func(w io.Writer) {
				fmt.Fprintln(w, "SEQ\tSTATUS\tTRIGGER\tSCHEDULED\tNODE\tTRIES\tDURATION\tERROR")
				for _, r := range res.JSON200.Items {
					status := string(r.Status)
					if r.SkipReason != nil {
						status = fmt.Sprintf("skipped (%s", *r.SkipReason)
						if r.SkippedFires > 1 {
							status += fmt.Sprintf(", %d fires", r.SkippedFires)
						}
						status += ")"
					}
					duration := "-"
					if r.DurationMS != nil {
						duration = humanDuration(time.Duration(*r.DurationMS) * time.Millisecond)
					}
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Seq, status, r.Trigger, stamp(r.ScheduledAt),
						orDash(r.NodeID), r.Attempts, duration, orDash(r.Error))
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "page size (at most 1000)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the next page, as printed after the previous one")
	return cmd
}
