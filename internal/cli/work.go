package cli

// tether work: the worker runner of package runner with its Exec handler,
// configured from flags and the environment, stopped by SIGTERM or SIGINT.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/envflag"
	"github.com/tether-run/tether/internal/fleet"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/tracing"
	"github.com/tether-run/tether/runner"
)

// workOptions are the flags of tether work.
type workOptions struct {
	server, token string
	retries       int
	queue         string
	concurrency   int
	ttl, grace    time.Duration
	heartbeat     time.Duration
	types, labels []string
	workerName    string
	command       []string

	inboxSignalName string
	inboxSignal     syscall.Signal // 0: none
	retryPolicy     client.RetryPolicy
}

func workCommand() *cobra.Command {
	var o workOptions
	cmd := &cobra.Command{
		Use:   "work --queue QUEUE [flags] -- COMMAND [ARGS...]",
		Short: "Run a command for every node of a queue (a worker runner)",
		Long: `Run a worker runner: each of --concurrency slots claims the next ready node of
--queue (a long poll), runs COMMAND for it, and reports how it ended.

COMMAND gets the node's JSON on stdin and, besides this process's
environment, TETHER_NODE_ID, TETHER_FENCE, TETHER_URL, TETHER_TOKEN,
TETHER_WORKER (the slot's name) and TETHER_INBOX. While it runs, the lease is
renewed at a third of --ttl.

Messages sent to the node (tether send node:ID ...) reach the command in
TETHER_INBOX, a JSON Lines file: one message per line, as GET /v1/inbox gives
it, appended as they arrive (those sent before the run are there when it
starts). The runner acknowledges each message once it is in the file, so its
sender sees it read. With --inbox-signal the command also gets that signal
after new lines are added (it must handle it: the default action of most
signals ends a process).

  exit 0      the node is completed; stdout is its result (JSON when stdout is
              valid JSON, else a string; beyond 1 MiB it is truncated and the
              result says so)
  exit != 0   the node is failed (back to its queue while attempts remain)
              with the last 4 KiB of stderr as its error
  lease lost  (taken, cancelled, expired) or the node's timeout_ms passed:
              the command is stopped (SIGTERM to its process group, SIGKILL
              5 s later)

Each slot reports itself in GET /v1/workers (idle, working on a node,
offline). On SIGTERM or SIGINT the runner stops claiming, waits up to --grace
for running commands, then stops them and releases their nodes, and exits 0;
a second signal ends the grace at once. If the runner dies without that
(kill -9), its nodes come back to the queue when their leases expire.`,
		Example: `  tether work --queue code -- ./agent.sh
  tether work --queue code --concurrency 4 --ttl 10m -- python agent.py --model big`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("no command: tether work --queue QUEUE -- COMMAND [ARGS...]")
			}
			o.command = args
			if err := o.resolve(); err != nil {
				return err
			}
			return runWork(o)
		},
	}
	f := cmd.Flags()
	// COMMAND's own flags are never ours, even without "--".
	f.SetInterspersed(false)
	f.StringVar(&o.server, "server", "", "Tether server URL (TETHER_URL, default "+defaultServer+")")
	f.StringVar(&o.token, "token", "", "bearer token of a worker identity (TETHER_TOKEN)")
	addRetriesFlag(f, &o.retries)
	f.StringVar(&o.queue, "queue", "", "the queue to take nodes from (required)")
	f.IntVar(&o.concurrency, "concurrency", 1, "how many commands run at once (slots)")
	f.DurationVar(&o.ttl, "ttl", 5*time.Minute, "lease TTL asked for each claim; renewed at a third of it")
	f.DurationVar(&o.grace, "grace", 30*time.Second, "on SIGTERM/SIGINT, how long running commands may finish before they are stopped")
	f.StringSliceVar(&o.types, "types", nil, "only claim nodes of these types (comma separated)")
	f.StringSliceVar(&o.labels, "labels", nil, "only claim nodes carrying all these labels (comma separated)")
	f.SetNormalizeFunc(flagAliases(map[string]string{"type": "types", "label": "labels"}))
	f.StringVar(&o.workerName, "worker-name", "", "slots are named NAME-1, NAME-2, ... in GET /v1/workers (default: HOST-PID, unique per runner process)")
	f.DurationVar(&o.heartbeat, "heartbeat", 30*time.Second, "how often each slot reports itself when nothing changes")
	f.StringVar(&o.inboxSignalName, "inbox-signal", "", "signal sent to the command when messages are added to $TETHER_INBOX: HUP, USR1, USR2 or WINCH (default: none)")
	return cmd
}

// resolve fills defaults from the environment and checks every option.
func (o *workOptions) resolve() error {
	if o.server == "" {
		o.server = envflag.String("TETHER_URL", defaultServer)
	}
	if o.token == "" {
		var err error
		if o.token, err = envToken("TETHER_TOKEN"); err != nil {
			return err
		}
	}
	var err error
	if o.retryPolicy, err = retryPolicy(o.retries); err != nil {
		return err
	}
	if o.workerName == "" {
		o.workerName = runner.DefaultWorkerName()
	}
	switch {
	case o.token == "":
		return usageErrorf("no token: set --token or TETHER_TOKEN")
	case o.queue == "":
		return usageErrorf("--queue is required")
	case !graphstore.ValidQueue(o.queue):
		return usageErrorf("--queue %q is not a queue name (1-128 characters of [A-Za-z0-9._:-])", o.queue)
	case o.concurrency < 1 || o.concurrency > runner.MaxSlots:
		return usageErrorf("--concurrency must be from 1 to 1000")
	case o.ttl < time.Second:
		return usageErrorf("--ttl must be at least 1s")
	case o.grace < 0:
		return usageErrorf("--grace must not be negative")
	case o.heartbeat < time.Second:
		return usageErrorf("--heartbeat must be at least 1s")
	case !fleet.ValidName(fmt.Sprintf("%s-%d", o.workerName, o.concurrency)):
		return usageErrorf("--worker-name %q is not a worker name (up to 120 characters of [A-Za-z0-9._:-], starting with a letter or digit)", o.workerName)
	}
	if o.inboxSignalName != "" {
		sig, ok := workSignals[strings.TrimPrefix(strings.ToUpper(o.inboxSignalName), "SIG")]
		if !ok {
			return usageErrorf("--inbox-signal must be HUP, USR1, USR2 or WINCH, not %q", o.inboxSignalName)
		}
		o.inboxSignal = sig
	}
	if _, err := exec.LookPath(o.command[0]); err != nil {
		return usageErrorf("cannot run %q: %w", o.command[0], err)
	}
	return nil
}

// runWork runs the runner until a signal (or a fatal error) stops it: the
// first SIGTERM or SIGINT stops claiming and gives running commands the
// grace, a second one ends the grace.
func runWork(o workOptions) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg := runner.Config{
		Server: o.server, Token: o.token, Queue: o.queue, Types: o.types, Labels: o.labels,
		Handler: &runner.Exec{Argv: o.command, Stderr: os.Stderr, InboxSignal: o.inboxSignal},
		Slots:   o.concurrency, TTL: o.ttl, Grace: o.grace, Heartbeat: o.heartbeat,
		WorkerName: o.workerName, Meta: map[string]any{"command": o.command[0]},
		Inbox: true, Logger: log, Retries: o.retryPolicy,
	}
	tp, stopTracing, err := tracing.Setup(context.Background(), "tether-work", os.Getenv)
	if err != nil {
		return err
	}
	defer tracing.Flush(log, stopTracing)
	if tp != nil {
		cfg.Tracer = tp.Tracer("github.com/tether-run/tether/runner")
		log.Info("tracing is on: each run is a span linked to the request that created its node")
	}
	r, err := runner.New(cfg)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case sig := <-sigs:
			log.Info("stopping: no more claims; running commands may finish", "queue", o.queue, "signal", sig.String(), "grace", o.grace.String())
			r.Stop()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			log.Info("second signal: stopping the commands still running", "queue", o.queue, "signal", sig.String())
			r.Kill()
		case <-done:
		}
	}()
	return r.Run(context.Background())
}
