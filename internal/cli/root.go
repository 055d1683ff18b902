package cli

// The client commands (nodes, edges, claim, queues, leases, events, ...)
// share this: where the server is, the token, the output format, how a
// response becomes output or an error, and how an error becomes an exit code.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tether-run/tether/client"
)

const defaultServer = "http://127.0.0.1:36725"

// cli is the state of the root's persistent flags.
type cli struct {
	server  string
	token   string
	output  string
	retries int
}

// newCLI adds --server, --token and --output to root, for every command.
func newCLI(root *cobra.Command) *cli {
	c := &cli{}
	f := root.PersistentFlags()
	f.StringVar(&c.server, "server", "", "Tether server URL (TETHER_URL, default "+defaultServer+")")
	f.StringVar(&c.token, "token", "", "bearer token: a JWT or an API key (TETHER_TOKEN)")
	addRetriesFlag(f, &c.retries)
	f.StringVarP(&c.output, "output", "o", "table", "output format: table (for people), json (the API's JSON; errors as problem JSON on stderr) or id (the answer's id alone, for $(...))")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	return c
}

// api is a client for the configured server; every client command starts here.
func (c *cli) api() (*client.ClientWithResponses, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	retry, err := c.retryOption()
	if err != nil {
		return nil, err
	}
	opts := []client.ClientOption{
		// Long polls wait up to 60 s for an answer.
		client.WithHTTPClient(&http.Client{Timeout: 90 * time.Second}),
		retry,
	}
	if tok := c.bearer(); tok != "" {
		opts = append(opts, client.WithBearerToken(tok))
	}
	return client.NewClientWithResponses(c.serverURL(), opts...)
}

// usable is the error api would give before making a client: a bad -o, a
// bad --retries, or an empty TETHER_TOKEN.
func (c *cli) usable() error {
	if err := c.checkOutput(); err != nil {
		return err
	}
	if _, err := retryPolicy(c.retries); err != nil {
		return err
	}
	if c.token == "" {
		if _, err := envToken("TETHER_TOKEN"); err != nil {
			return err
		}
	}
	return nil
}

func (c *cli) serverURL() string {
	if c.server != "" {
		return c.server
	}
	return ServerURL()
}

func (c *cli) bearer() string {
	if c.token != "" {
		return c.token
	}
	return os.Getenv("TETHER_TOKEN")
}

// envToken is the token in the variable name. A variable that is set but
// empty is an error rather than "no token": it is what
// `export TETHER_TOKEN=$(tether token mint ...)` leaves when the command in
// it failed, and calling on without a token would only show a 401 later,
// far from the cause.
func envToken(name string) (string, error) {
	v, ok := os.LookupEnv(name)
	if ok && strings.TrimSpace(v) == "" {
		return "", usageErrorf("%s is empty: the command that set it printed nothing (did it fail?); set it to a token or unset it", name)
	}
	return strings.TrimSpace(v), nil
}

func (c *cli) checkOutput() error {
	if c.output != "table" && c.output != "json" && c.output != "id" {
		return usageErrorf("--output must be table, json or id, not %q", c.output)
	}
	return nil
}

func (c *cli) json() bool { return c.output == "json" }

// emit writes body (the API's JSON) pretty-printed with -o json, and
// otherwise whatever table writes, aligned in columns.
func (c *cli) emit(w io.Writer, body []byte, table func(w io.Writer)) error {
	if c.json() {
		return writeJSON(w, body)
	}
	if c.output == "id" {
		return writeID(w, body)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

func writeJSON(w io.Writer, body []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(body), "", "  "); err != nil {
		return fmt.Errorf("error formatting the server's answer: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// writeID writes the answer's id alone (a blob's sha256, a claim's node
// id), for `id=$(tether ... -o id)`; for a list, the id of each item, one a
// line, as kubectl's -o name does (for xargs and while read).
func writeID(w io.Writer, body []byte) error {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("error reading the server's answer: %w", err)
	}
	if list.Items == nil {
		id, err := answerID(body)
		if err != nil {
			return err
		}
		if id == "" {
			return errors.New("the answer has no id: -o id does not apply to this command")
		}
		_, err = fmt.Fprintln(w, id)
		return err
	}
	var b strings.Builder
	for _, item := range list.Items {
		id, err := answerID(item)
		if err != nil {
			return err
		}
		if id == "" {
			return errors.New("the items listed have no id: -o id does not apply to this command")
		}
		b.WriteString(id + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// answerID is what names one answer or list item: its id, a blob's sha256,
// a claim's node, an event's seq, a lease's node_id, a worker's name, a
// queue's name; "" when it has none of them.
func answerID(raw []byte) (string, error) {
	var a struct {
		ID     string `json:"id"`
		SHA256 string `json:"sha256"`
		Node   struct {
			ID string `json:"id"`
		} `json:"node"`
		NodeID string      `json:"node_id"`
		Worker string      `json:"worker"`
		Queue  string      `json:"queue"`
		Seq    json.Number `json:"seq"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		// A node's "node" member may be a string (a worker's), not an object.
		var b struct {
			ID     string `json:"id"`
			Worker string `json:"worker"`
		}
		if json.Unmarshal(raw, &b) != nil {
			return "", fmt.Errorf("error reading the server's answer: %w", err)
		}
		a.ID, a.Worker = b.ID, b.Worker
	}
	for _, id := range []string{a.ID, a.SHA256, a.Node.ID, a.Seq.String(), a.NodeID, a.Worker, a.Queue} {
		if id != "" {
			return id, nil
		}
	}
	return "", nil
}

// unreachable is the error of a call that got no answer.
func (c *cli) unreachable(err error) error {
	return fmt.Errorf("error calling the server at %s (set --server or TETHER_URL): %w", c.serverURL(), err)
}

// check is nil for an answer below 400 and otherwise an error: the problem
// document, shown with its extension members.
func (c *cli) check(resp *http.Response, body []byte) error {
	err := client.CheckResponse(resp, body)
	var p *client.Problem
	if errors.As(err, &p) {
		return &problemError{p: p, body: body, noToken: c.bearer() == ""}
	}
	return err
}

// problemError prints a problem's code and detail, then the members that say
// what to do about it: who holds the node and until when, what it waits for.
type problemError struct {
	p       *client.Problem
	body    []byte // the problem document as the server sent it
	noToken bool
}

func (e *problemError) Unwrap() error { return e.p }

func (e *problemError) Error() string {
	p := e.p
	var b strings.Builder
	b.WriteString(p.Error())
	line := func(k, format string, args ...any) {
		fmt.Fprintf(&b, "\n  %-12s %s", k+":", fmt.Sprintf(format, args...))
	}
	if p.Code == client.ProblemCodeConflict || p.Code == client.ProblemCodeLeaseLost {
		holder := "nobody"
		if p.Holder != nil {
			holder = *p.Holder
		}
		line("holder", "%s", holder)
	}
	if p.ExpiresAt != nil {
		line("expires_at", "%s (%s)", stamp(*p.ExpiresAt), relative(*p.ExpiresAt))
	}
	if p.Reason != "" {
		line("reason", "%s", p.Reason)
	}
	if len(p.BlockedBy) > 0 {
		line("blocked_by", "%s", strings.Join(p.BlockedBy, ", "))
	}
	if p.RunAt != nil {
		line("run_at", "%s (%s)", stamp(*p.RunAt), relative(*p.RunAt))
	}
	if p.Field != "" {
		line("field", "%s", p.Field)
	}
	if p.CurrentVersion != nil {
		line("version", "%d (the node's current version)", *p.CurrentVersion)
	}
	if p.Status >= 500 && p.RequestID != "" {
		line("request_id", "%s", p.RequestID)
	}
	if p.Status == http.StatusUnauthorized && e.noToken {
		b.WriteString("\n  no token was sent: set --token or TETHER_TOKEN")
	}
	return b.String()
}

// usageError is a mistake in the command line: exit code 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode is 2 for a usage error and 1 for any other.
func exitCode(err error) int {
	var u usageError
	// cobra reports an unknown sub-command of the root before any hook of ours runs.
	if errors.As(err, &u) || strings.HasPrefix(err.Error(), "unknown command ") {
		return 2
	}
	return 1
}

// usageArgs wraps a cobra argument check so that its failure is a usage error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// groupCommand is a command that only holds sub-commands: an unknown one is a
// usage error rather than a silent help page.
func groupCommand(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", a[0], cmd.CommandPath())
			if near := cmd.SuggestionsFor(a[0]); len(near) > 0 {
				msg += "\n\nDid you mean this?\n\t" + strings.Join(near, "\n\t")
			}
			return usageError{errors.New(msg)}
		},
	}
	cmd.AddCommand(subs...)
	return cmd
}

// clientFlags are the root's flags for the commands that call a server.
var clientFlags = []string{"server", "token", "output"}

// notAClient marks a command that does not call a server the root's way
// (serve, check, restore; work has its own --server and --token): the
// root's client flags named are left out of its help, and refused when
// given, rather than silently ignored.
func notAClient(cmd *cobra.Command, flags ...string) *cobra.Command {
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		root := c.Root()
		for _, name := range flags {
			if f := root.PersistentFlags().Lookup(name); f != nil {
				f.Hidden = true
				defer func() { f.Hidden = false }()
			}
		}
		root.HelpFunc()(c, args)
	})
	check := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		for _, name := range flags {
			if f := c.Root().PersistentFlags().Lookup(name); f != nil && f.Changed {
				return usageErrorf("--%s is a flag of the client commands; %s does not take it", name, c.CommandPath())
			}
		}
		if check != nil {
			return check(c, args)
		}
		return nil
	}
	return cmd
}

// ifSet is &v when the flag was given, else nil: the API's "absent".
func ifSet[T any](cmd *cobra.Command, name string, v T) *T {
	if cmd.Flags().Changed(name) {
		return &v
	}
	return nil
}

// jsonObject parses a flag's JSON object value.
func jsonObject(flag, raw string) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return nil, usageErrorf("--%s must be a JSON object, like '{\"key\": 1}'", flag)
	}
	return m, nil
}

// millis is d in milliseconds, for the API's *_ms fields.
func millis(d time.Duration) int64 { return d.Milliseconds() }

// flagAliases lets a command take an older or singular flag name for its
// canonical one (--retired for --include-retired, --type for --types), so
// that the CLI speaks the API's vocabulary without breaking scripts.
func flagAliases(aliases map[string]string) func(*pflag.FlagSet, string) pflag.NormalizedName {
	return func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if to, ok := aliases[name]; ok {
			name = to
		}
		return pflag.NormalizedName(name)
	}
}
