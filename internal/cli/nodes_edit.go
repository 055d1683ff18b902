package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

func (c *cli) nodesCreateCommand() *cobra.Command {
	var id, typ, title, body, queue, parent, target, props, idemKey, backoff string
	var labels, dependsOn, blobs, keys []string
	var priority, maxAttempts int64
	var delay, timeout time.Duration
	cmd := &cobra.Command{
		Use:   "create --type TYPE [flags]",
		Short: "Create a node (queued with --queue, else open)",
		Example: `  tether nodes create --type task --queue default --title "Add API rate limits"
  tether nodes create --type task --id deploy --depends-on build --depends-on test --queue ops`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if typ == "" {
				return usageErrorf("--type is required")
			}
			// A bad -o or token is told before a bad flag value.
			if err := c.usable(); err != nil {
				return err
			}
			n := client.NodeCreate{
				Type: typ, ID: ifSet(cmd, "id", id), Title: ifSet(cmd, "title", title), Body: ifSet(cmd, "body", body),
				Queue: ifSet(cmd, "queue", queue), Parent: ifSet(cmd, "parent", parent), Target: ifSet(cmd, "target", target),
				Priority: ifSet(cmd, "priority", priority), MaxAttempts: ifSet(cmd, "max-attempts", maxAttempts),
				Labels: ifSet(cmd, "label", labels), DependsOn: ifSet(cmd, "depends-on", dependsOn),
				Blobs: ifSet(cmd, "blob", blobs), DelayMS: ifSet(cmd, "delay", millis(delay)), TimeoutMS: ifSet(cmd, "timeout", millis(timeout)),
				ConcurrencyKeys: ifSet(cmd, "concurrency-key", keys),
			}
			if cmd.Flags().Changed("backoff") {
				b, err := parseBackoff(backoff)
				if err != nil {
					return err
				}
				n.Backoff = b
			}
			if cmd.Flags().Changed("props") {
				m, err := jsonObject("props", props)
				if err != nil {
					return err
				}
				n.Props = &m
			}
			return call(c, cmd, func(api *apiClient) (*client.CreateNodeResponse, error) {
				return api.CreateNodeWithResponse(cmd.Context(), &client.CreateNodeParams{IdempotencyKey: ifSet(cmd, "idempotency-key", idemKey)}, n)
			}, func(w io.Writer, res *client.CreateNodeResponse) {
				if res.JSON200 != nil { // its unique key named a node: nothing was made
					fmt.Fprintf(w, "duplicate of %s: nothing made\n", res.JSON200.ID)
					showNode(w, res.JSON200)
					return
				}
				showNode(w, res.JSON201)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&typ, "type", "", "the node's type (required)")
	f.StringVar(&id, "id", "", "the node's id (default: a UUIDv7 made by the server)")
	f.StringVar(&title, "title", "", "a title for people")
	f.StringVar(&body, "body", "", "a longer description")
	f.StringVar(&queue, "queue", "", "the queue it waits in; without one the node is open")
	f.Int64Var(&priority, "priority", 0, "higher runs first")
	f.StringSliceVar(&labels, "label", nil, "a label (repeatable, or comma separated)")
	f.StringVar(&parent, "parent", "", "make it a child of this node")
	f.StringSliceVar(&dependsOn, "depends-on", nil, "a node it waits for (repeatable, or comma separated)")
	f.StringSliceVar(&blobs, "blob", nil, "the sha256 of a blob it references (repeatable; see tether blob put)")
	f.StringVar(&target, "target", "", "only this identity may claim it")
	f.StringArrayVar(&keys, "concurrency-key", nil, "a concurrency key its run holds, such as repo:acme/web (repeatable, at most 8; see tether limits)")
	f.StringVar(&props, "props", "", "properties, a JSON object")
	f.Int64Var(&maxAttempts, "max-attempts", 0, "runs before it is dead (default: the tenant's)")
	f.StringVar(&backoff, "backoff", "", `retry backoff INITIAL[,MAX[,FACTOR]], e.g. 30s,1h,3 (default: the tenant's, 5s,10m,2; "none": at once)`)
	f.DurationVar(&delay, "delay", 0, "not claimable before this long from now (e.g. 10m)")
	f.DurationVar(&timeout, "timeout", 0, "a run longer than this is treated as expired, however often renewed")
	f.StringVar(&idemKey, "idempotency-key", "", "replay the first answer instead of creating again (24 h)")
	return cmd
}

// clearable are the members `nodes patch --clear` may set to null.
func clearable() []struct {
	name string
	null func(*client.NodePatch)
} {
	return []struct {
		name string
		null func(*client.NodePatch)
	}{
		{"title", func(p *client.NodePatch) { p.Title = client.Null[string]() }},
		{"body", func(p *client.NodePatch) { p.Body = client.Null[string]() }},
		{"queue", func(p *client.NodePatch) { p.Queue = client.Null[string]() }},
		{"priority", func(p *client.NodePatch) { p.Priority = client.Null[int64]() }},
		{"target", func(p *client.NodePatch) { p.Target = client.Null[string]() }},
		{"labels", func(p *client.NodePatch) { p.Labels = client.Null[[]string]() }},
		{"blobs", func(p *client.NodePatch) { p.Blobs = client.Null[[]string]() }},
		{"props", func(p *client.NodePatch) { p.Props = client.Null[map[string]any]() }},
		{"max_attempts", func(p *client.NodePatch) { p.MaxAttempts = client.Null[int64]() }},
		{"run_at", func(p *client.NodePatch) { p.RunAt = client.Null[time.Time]() }},
		{"timeout_ms", func(p *client.NodePatch) { p.TimeoutMS = client.Null[int64]() }},
	}
}

// clearMember sets the member name (run_at or run-at) of p to null.
func clearMember(p *client.NodePatch, name string) error {
	var names []string
	for _, m := range clearable() {
		if m.name == strings.ReplaceAll(name, "-", "_") {
			m.null(p)
			return nil
		}
		names = append(names, m.name)
	}
	return usageErrorf("--clear %q: a patch may clear only %s", name, strings.Join(names, ", "))
}

func (c *cli) nodesPatchCommand() *cobra.Command {
	var title, body, queue, target, props, runAt string
	var labels, blobs, clear []string
	var priority, maxAttempts, ifMatch int64
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "patch <id> [flags]",
		Short: "Change a node's fields (a JSON merge patch)",
		Example: `  tether nodes patch task-1 --priority 10 --label urgent
  tether nodes patch task-1 --props '{"retries": null}' --clear target`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			var p client.NodePatch
			changed := len(clear) > 0
			set := func(name string, apply func()) {
				if cmd.Flags().Changed(name) {
					apply()
					changed = true
				}
			}
			set("title", func() { p.Title = client.Value(title) })
			set("body", func() { p.Body = client.Value(body) })
			set("queue", func() { p.Queue = client.Value(queue) })
			set("target", func() { p.Target = client.Value(target) })
			set("priority", func() { p.Priority = client.Value(priority) })
			set("max-attempts", func() { p.MaxAttempts = client.Value(maxAttempts) })
			set("label", func() { p.Labels = client.Value(labels) })
			set("blob", func() { p.Blobs = client.Value(blobs) })
			set("timeout", func() { p.TimeoutMS = client.Value(millis(timeout)) })
			var bad error
			set("run-at", func() {
				t, err := time.Parse(time.RFC3339, runAt)
				bad = errors.Join(bad, err)
				p.RunAt = client.Value(t)
			})
			if bad != nil {
				return usageErrorf("--run-at must be an RFC 3339 time, like 2026-03-01T09:00:00Z")
			}
			if cmd.Flags().Changed("props") {
				m, err := jsonObject("props", props)
				if err != nil {
					return err
				}
				p.Props, changed = client.Value(m), true
			}
			for _, name := range clear {
				if err := clearMember(&p, name); err != nil {
					return err
				}
			}
			if !changed {
				return usageErrorf("nothing to change: give a field flag or --clear")
			}
			var params client.UpdateNodeParams
			if cmd.Flags().Changed("if-match") {
				v := strconv.Quote(strconv.FormatInt(ifMatch, 10))
				params.IfMatch = &v
			}
			return call(c, cmd, func(api *apiClient) (*client.UpdateNodeResponse, error) {
				return api.UpdateNodeWithApplicationMergePatchPlusJSONBodyWithResponse(cmd.Context(), a[0], &params, p)
			}, func(w io.Writer, res *client.UpdateNodeResponse) { showNode(w, res.JSON200) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&title, "title", "", "a new title")
	f.StringVar(&body, "body", "", "a new description")
	f.StringVar(&queue, "queue", "", "move it to this queue")
	f.StringVar(&target, "target", "", "only this identity may claim it")
	f.Int64Var(&priority, "priority", 0, "a new priority")
	f.Int64Var(&maxAttempts, "max-attempts", 0, "a new max_attempts")
	f.StringSliceVar(&labels, "label", nil, "the labels, replacing the old ones (repeatable)")
	f.StringSliceVar(&blobs, "blob", nil, "the sha256s of the blobs it references, replacing the old ones (repeatable)")
	f.StringVar(&props, "props", "", "a JSON object merged into the props (a null member removes it)")
	f.StringVar(&runAt, "run-at", "", "not claimable before this RFC 3339 time")
	f.DurationVar(&timeout, "timeout", 0, "a new run timeout")
	f.StringSliceVar(&clear, "clear", nil, "set a member to null (repeatable): title, body, queue, target, labels, props, run_at, ...")
	f.Int64Var(&ifMatch, "if-match", 0, "apply only if the node is still at this version")
	return cmd
}

// parseBackoff reads --backoff: INITIAL[,MAX[,FACTOR]] (MAX defaults to
// INITIAL, FACTOR to 2) or "none" (failed runs come back at once).
func parseBackoff(v string) (*client.Backoff, error) {
	if v == "none" {
		return &client.Backoff{InitialMS: 0, MaxMS: 0, Factor: 1}, nil
	}
	parts := strings.Split(v, ",")
	bad := usageErrorf("--backoff %q: want INITIAL[,MAX[,FACTOR]], e.g. 30s,1h,3, or none", v)
	if len(parts) > 3 {
		return nil, bad
	}
	initial, err := time.ParseDuration(parts[0])
	if err != nil || initial < 0 {
		return nil, bad
	}
	b := &client.Backoff{InitialMS: millis(initial), MaxMS: millis(initial), Factor: 2}
	if len(parts) > 1 {
		maxD, err := time.ParseDuration(parts[1])
		if err != nil || maxD < initial {
			return nil, usageErrorf("--backoff %q: MAX must be a duration no shorter than INITIAL", v)
		}
		b.MaxMS = millis(maxD)
	}
	if len(parts) > 2 {
		f, err := strconv.ParseFloat(parts[2], 64)
		if err != nil {
			return nil, bad
		}
		b.Factor = f // the server checks its range
	}
	return b, nil
}
