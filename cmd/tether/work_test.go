package main

// End-to-end tests of `tether work`: a real server and real runner processes
// running small shell commands. Commands that must stay running until the
// test has looked wait for a gate file ($OUT/go-<node id>) instead of
// sleeping, and every wait is bounded.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

const (
	workWait = 10 * time.Second // the most any step of these tests waits
	// workGate waits (at most 10 s) for the test to create $OUT/go-<node id>.
	workGate = `i=0; while [ ! -e "$OUT/go-$TETHER_NODE_ID" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; `
)

// workEnv is one server shared by the runner tests, with a short stale
// window so that a runner killed with -9 shows as stale within the test.
type workEnv struct {
	srv    *proc
	hc     *http.Client
	disp   *client.ClientWithResponses
	reader *client.ClientWithResponses
}

// runner is a `tether work` process and the directory its commands share
// with the test ($OUT).
type runner struct {
	*proc
	out   string
	token string
}

// startRunner runs `tether work` for identity sub with args, the command
// after them.
func (e *workEnv) startRunner(t *testing.T, sub string, args ...string) *runner {
	t.Helper()
	out := t.TempDir()
	tok := mint(t, sub, "worker")
	env := append(baseEnv(), "TETHER_URL="+e.srv.url, "TETHER_TOKEN="+tok, "OUT="+out)
	p := launch(t, "runner "+sub, "", env, append([]string{"work"}, args...)...)
	return &runner{proc: p, out: out, token: tok}
}

// open lets the command of node id go on.
func (r *runner) open(t *testing.T, id string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(r.out, "go-"+id), nil, 0o600))
}

// file reads a file a command wrote, waiting for it to appear.
func (r *runner) file(t *testing.T, name string) string {
	t.Helper()
	var b []byte
	workEventually(t, "the command writes "+name, func() bool {
		var err error
		b, err = os.ReadFile(filepath.Join(r.out, name))
		return err == nil && len(b) > 0 && b[len(b)-1] == '\n'
	})
	return string(b)
}

// waitLog waits until the runner's stderr says msg.
func (r *runner) waitLog(t *testing.T, msg string) {
	t.Helper()
	workEventually(t, "the runner logs "+msg, func() bool { return strings.Contains(r.stderr.String(), msg) })
}

// workEventually polls cond every 20 ms for at most workWait.
func workEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(workWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", workWait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *workEnv) create(t *testing.T, n client.NodeCreate) {
	t.Helper()
	n.Type = "task"
	res, err := e.disp.CreateNodeWithResponse(context.Background(), nil, n)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
}

func (e *workEnv) node(t *testing.T, id string) client.Node {
	t.Helper()
	res, err := e.reader.GetNodeWithResponse(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return *res.JSON200
}

// waitNode waits until node id has status st and returns it.
func (e *workEnv) waitNode(t *testing.T, id string, st client.NodeStatus) client.Node {
	t.Helper()
	var n client.Node
	workEventually(t, fmt.Sprintf("node %s is %s", id, st), func() bool {
		n = e.node(t, id)
		return n.Status == st
	})
	return n
}

// waitWorker waits until worker name of identity by has status st (and
// names node, for working) and returns it.
func (e *workEnv) waitWorker(t *testing.T, by, name string, st client.WorkerStatus, node string) client.Worker {
	t.Helper()
	var found client.Worker
	workEventually(t, fmt.Sprintf("worker %s/%s is %s %s", by, name, st, node), func() bool {
		res, err := e.reader.ListWorkersWithResponse(context.Background(), &client.ListWorkersParams{Limit: ptr(1000)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		for _, w := range res.JSON200.Items {
			if w.By == by && w.Worker == name {
				found = w
				return w.Status == st && (node == "" || (w.Node != nil && *w.Node == node))
			}
		}
		return false
	})
	return found
}

// assigned are the retired assigned edges of node id: holder -> outcome.
func (e *workEnv) assigned(t *testing.T, id string) map[string]string {
	t.Helper()
	res, err := e.reader.ListNodeEdgesWithResponse(context.Background(), id, &client.ListNodeEdgesParams{
		Type: ptr("assigned"), IncludeRetired: ptr(true),
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	out := map[string]string{}
	for _, ed := range res.JSON200.Items {
		outcome, _ := ed.Props["outcome"].(string)
		out[strings.TrimPrefix(ed.To, "identity:")] = outcome
	}
	return out
}

// stop sends SIGTERM and waits (bounded) for exit code 0.
func (r *runner) stop(t *testing.T) {
	t.Helper()
	r.signal(syscall.SIGTERM)
	require.Equal(t, 0, r.waitExit(workWait), "the runner exits 0 after SIGTERM")
}

// pidGone reports whether the process a command recorded has ended (a
// zombie counts: nothing of it runs).
func pidGone(t *testing.T, pidText string) bool {
	pid, err := strconv.Atoi(strings.TrimSpace(pidText))
	require.NoError(t, err, pidText)
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return runtime.GOOS == "linux" // gone meanwhile
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(rest, "Z")
}

func TestWorkRunner(t *testing.T) {
	srv := startServer(t, "server", t.TempDir(), "TETHER_WORKER_STALE_MS=1500")
	hc := httpClient(t)
	e := &workEnv{srv: srv, hc: hc, disp: srv.as(hc, mint(t, "head", "dispatcher")), reader: srv.as(hc, mint(t, "auditor", "reader"))}

	t.Run("exit 0 completes with stdout as the result", func(t *testing.T) {
		t.Parallel()
		r := e.startRunner(t, "runner-ok", "--queue", "w-ok", "--worker-name", "ok", "--", "sh", "-c",
			`cat > "$OUT/$TETHER_NODE_ID.stdin"; `+
				`echo "$TETHER_NODE_ID $TETHER_FENCE $TETHER_WORKER $TETHER_URL" > "$OUT/$TETHER_NODE_ID.env"; `+
				`echo "$TETHER_TOKEN" > "$OUT/$TETHER_NODE_ID.token"; `+workGate+
				`case "$TETHER_NODE_ID" in ok-json) echo '{"answer": 42}';; ok-big) head -c 1500000 /dev/zero | tr '\0' a;; *) printf 'plain text';; esac`)
		e.waitWorker(t, "runner-ok", "ok-1", client.WorkerStatusIdle, "")

		e.create(t, client.NodeCreate{ID: ptr("ok-json"), Queue: ptr("w-ok"), Props: &map[string]any{"x": 1}})
		w := e.waitWorker(t, "runner-ok", "ok-1", client.WorkerStatusWorking, "ok-json")
		require.Equal(t, "sh", w.Meta["command"])
		require.Equal(t, client.NodeStatusRunning, e.node(t, "ok-json").Status)
		require.Equal(t, "ok-json 1 ok-1 "+e.srv.url+"\n", r.file(t, "ok-json.env"))
		raw, err := os.ReadFile(filepath.Join(r.out, "ok-json.stdin")) // written in full before the .env file
		require.NoError(t, err)
		var stdin client.Node
		require.NoError(t, json.Unmarshal(raw, &stdin), "the node's JSON on stdin: %s", raw)
		require.Equal(t, "ok-json", stdin.ID)
		require.Equal(t, float64(1), stdin.Props["x"])
		require.Equal(t, client.NodeStatusRunning, stdin.Status)
		require.Equal(t, r.token+"\n", r.file(t, "ok-json.token"))
		r.open(t, "ok-json")
		n := e.waitNode(t, "ok-json", client.NodeStatusDone)
		require.Equal(t, map[string]any{"answer": float64(42)}, n.Result, "JSON stdout is the result as JSON")
		require.Equal(t, map[string]string{"runner-ok": "done"}, e.assigned(t, "ok-json"))

		r.open(t, "ok-text")
		e.create(t, client.NodeCreate{ID: ptr("ok-text"), Queue: ptr("w-ok")})
		require.Equal(t, "plain text", e.waitNode(t, "ok-text", client.NodeStatusDone).Result, "other stdout is a JSON string")

		// 1.5 MB of output: truncated to 1 MiB, and further when that is
		// over the server's body limit (1 MiB by default).
		r.open(t, "ok-big")
		e.create(t, client.NodeCreate{ID: ptr("ok-big"), Queue: ptr("w-ok")})
		big, ok := e.waitNode(t, "ok-big", client.NodeStatusDone).Result.(map[string]any)
		require.True(t, ok, "a truncated result is an object")
		require.Equal(t, true, big["truncated"])
		require.Equal(t, float64(1500000), big["output_bytes"])
		kept, _ := big["output"].(string)
		require.NotEmpty(t, kept)
		require.LessOrEqual(t, len(kept), 1<<20)
		require.Equal(t, strings.Repeat("a", len(kept)), kept, "the start of the output")
		r.waitLog(t, "over the server's body limit")

		e.waitWorker(t, "runner-ok", "ok-1", client.WorkerStatusIdle, "")
		r.stop(t)
		off := e.waitWorker(t, "runner-ok", "ok-1", client.WorkerStatusOffline, "")
		require.Nil(t, off.Node)
	})

	t.Run("a completion claims the next ready node in the same call", func(t *testing.T) {
		t.Parallel()
		r := e.startRunner(t, "runner-next", "--queue", "w-next", "--worker-name", "next", "--", "sh", "-c",
			workGate+`echo "\"$TETHER_NODE_ID\""`)
		e.waitWorker(t, "runner-next", "next-1", client.WorkerStatusIdle, "")
		e.create(t, client.NodeCreate{ID: ptr("next-a"), Queue: ptr("w-next")})
		e.waitWorker(t, "runner-next", "next-1", client.WorkerStatusWorking, "next-a")
		// Queued while next-a runs: each completion hands over the next.
		e.create(t, client.NodeCreate{ID: ptr("next-b"), Queue: ptr("w-next"), Priority: ptr(int64(1))})
		e.create(t, client.NodeCreate{ID: ptr("next-c"), Queue: ptr("w-next")})
		for _, id := range []string{"next-a", "next-b", "next-c"} {
			r.open(t, id)
		}
		for _, id := range []string{"next-a", "next-b", "next-c"} {
			require.Equal(t, id, e.waitNode(t, id, client.NodeStatusDone).Result)
			require.Equal(t, map[string]string{"runner-next": "done"}, e.assigned(t, id))
		}
		r.waitLog(t, "next=next-c")
		require.Contains(t, r.stderr.String(), "the completion claimed the next node")
		require.Contains(t, r.stderr.String(), "next=next-b", "next-a's completion claimed next-b (the higher priority)")
		e.waitWorker(t, "runner-next", "next-1", client.WorkerStatusIdle, "")
		r.stop(t)
	})

	t.Run("exit 3 fails with the tail of stderr", func(t *testing.T) {
		t.Parallel()
		r := e.startRunner(t, "runner-fail", "--queue", "w-fail", "--worker-name", "fail", "--", "sh", "-c",
			`head -c 6000 /dev/zero | tr '\0' x >&2; printf '\nboom: exit three\n' >&2; exit 3`)
		e.create(t, client.NodeCreate{ID: ptr("fail-1"), Queue: ptr("w-fail"), MaxAttempts: ptr(int64(2)),
			Backoff: &client.Backoff{InitialMS: 200, MaxMS: 200, Factor: 1}})
		n := e.waitNode(t, "fail-1", client.NodeStatusDead) // failed, requeued, failed again: out of attempts
		require.EqualValues(t, 2, n.Attempts)
		require.NotNil(t, n.Error)
		require.True(t, strings.HasSuffix(*n.Error, "xxx\nboom: exit three"), *n.Error)
		require.LessOrEqual(t, len(*n.Error), 4096, "only the last 4 KiB of stderr")
		require.Greater(t, len(*n.Error), 4000)
		require.Equal(t, map[string]string{"runner-fail": "failed"}, e.assigned(t, "fail-1"))
		r.stop(t)
	})

	t.Run("a command past the node's timeout_ms is stopped and the server ends the run", func(t *testing.T) {
		t.Parallel()
		r := e.startRunner(t, "runner-slow", "--queue", "w-timeout", "--worker-name", "slow", "--", "sh", "-c",
			`echo $$ > "$OUT/pid"; exec sleep 30`)
		e.waitWorker(t, "runner-slow", "slow-1", client.WorkerStatusIdle, "")
		created := time.Now()
		e.create(t, client.NodeCreate{ID: ptr("slow-1"), Queue: ptr("w-timeout"), TimeoutMS: ptr(int64(1500)), MaxAttempts: ptr(int64(1))})
		pid := r.file(t, "pid")
		n := e.waitNode(t, "slow-1", client.NodeStatusDead)
		require.Equal(t, "timeout", *n.Error, "the reaper ends the run with error timeout")
		require.Equal(t, map[string]string{"runner-slow": "expired"}, e.assigned(t, "slow-1"))
		workEventually(t, "the command is gone", func() bool { return pidGone(t, pid) })
		require.Less(t, time.Since(created), 5*time.Second, "stopped soon after 1.5 s, not after 30 s")
		r.waitLog(t, "timeout_ms passed")
		e.waitWorker(t, "runner-slow", "slow-1", client.WorkerStatusIdle, "")
		r.stop(t)
	})

	t.Run("a runner killed with -9 loses its node to the reaper and another runner completes it", func(t *testing.T) {
		t.Parallel()
		a := e.startRunner(t, "runner-a", "--queue", "w-kill", "--worker-name", "a", "--ttl", "2s", "--", "sh", "-c",
			`echo $$ > "$OUT/pid"; exec sleep 30`)
		e.create(t, client.NodeCreate{ID: ptr("kill-1"), Queue: ptr("w-kill")})
		e.waitWorker(t, "runner-a", "a-1", client.WorkerStatusWorking, "kill-1")
		pid := a.file(t, "pid")
		a.kill9()
		killed := time.Now()
		if runtime.GOOS == "linux" {
			workEventually(t, "the orphaned command dies with its runner", func() bool { return pidGone(t, pid) })
		} else {
			t.Cleanup(func() { p, _ := strconv.Atoi(strings.TrimSpace(pid)); _ = syscall.Kill(p, syscall.SIGKILL) })
		}

		b := e.startRunner(t, "runner-b", "--queue", "w-kill", "--worker-name", "b", "--ttl", "2s", "--", "sh", "-c",
			`cat > /dev/null; echo '"second"'`)
		n := e.waitNode(t, "kill-1", client.NodeStatusDone)
		require.Less(t, time.Since(killed), 2*time.Second+workWait/2, "back within the TTL and the reaper interval")
		require.Equal(t, "second", n.Result)
		require.EqualValues(t, 2, n.Attempts)
		require.Equal(t, map[string]string{"runner-a": "expired", "runner-b": "done"}, e.assigned(t, "kill-1"))

		ghost := e.waitWorker(t, "runner-a", "a-1", client.WorkerStatusWorking, "kill-1")
		workEventually(t, "the killed runner's slot goes stale", func() bool {
			ghost = e.waitWorker(t, "runner-a", "a-1", client.WorkerStatusWorking, "kill-1")
			return ghost.Stale
		})
		b.stop(t)
	})

	t.Run("SIGTERM lets a running command finish within the grace", func(t *testing.T) {
		t.Parallel()
		r := e.startRunner(t, "runner-grace", "--queue", "w-grace", "--worker-name", "g", "--concurrency", "2", "--grace", "5s", "--", "sh", "-c",
			workGate+`echo '{"finished": true}'`)
		e.waitWorker(t, "runner-grace", "g-2", client.WorkerStatusIdle, "")
		e.create(t, client.NodeCreate{ID: ptr("grace-1"), Queue: ptr("w-grace")})
		working := "g-1"
		workEventually(t, "a slot runs grace-1", func() bool {
			res, err := e.reader.ListWorkersWithResponse(context.Background(), nil)
			require.NoError(t, err)
			for _, w := range res.JSON200.Items {
				if w.By == "runner-grace" && w.Status == client.WorkerStatusWorking {
					working = w.Worker
					return true
				}
			}
			return false
		})
		r.signal(syscall.SIGTERM)
		r.waitLog(t, "stopping: no more claims")
		e.create(t, client.NodeCreate{ID: ptr("grace-2"), Queue: ptr("w-grace")})
		time.Sleep(200 * time.Millisecond) // time for a slot that still claimed to take it
		select {
		case <-r.exited:
			t.Fatal("the runner exited while its command was running")
		default:
		}
		r.open(t, "grace-1")
		require.Equal(t, 0, r.waitExit(workWait))
		require.Equal(t, map[string]any{"finished": true}, e.node(t, "grace-1").Result, "completed before the runner exited")
		require.Equal(t, client.NodeStatusDone, e.node(t, "grace-1").Status)
		idle := e.node(t, "grace-2")
		require.Equal(t, client.NodeStatusQueued, idle.Status, "no claims after the signal")
		require.EqualValues(t, 0, idle.Attempts)
		for _, name := range []string{"g-1", "g-2"} {
			require.Nil(t, e.waitWorker(t, "runner-grace", name, client.WorkerStatusOffline, "").Node)
		}
		require.Contains(t, []string{"g-1", "g-2"}, working)
	})

	t.Run("SIGTERM past the grace stops the command and releases the node", func(t *testing.T) {
		t.Parallel()
		// The command ignores SIGTERM (and so does sleep, which inherits
		// that): only the SIGKILL 5 s after it ends it.
		r := e.startRunner(t, "runner-stuck", "--queue", "w-release", "--worker-name", "s", "--grace", "1s", "--", "sh", "-c",
			`trap "" TERM; echo $$ > "$OUT/pid"; sleep 30; echo '"too late"'`)
		e.create(t, client.NodeCreate{ID: ptr("stuck-1"), Queue: ptr("w-release")})
		e.waitWorker(t, "runner-stuck", "s-1", client.WorkerStatusWorking, "stuck-1")
		pid := r.file(t, "pid")
		signalled := time.Now()
		r.signal(syscall.SIGTERM)
		require.Equal(t, 0, r.waitExit(workWait+5*time.Second))
		took := time.Since(signalled)
		require.Greater(t, took, 6*time.Second, "1 s of grace, then 5 s between SIGTERM and SIGKILL")
		require.True(t, pidGone(t, pid), "the command is gone")
		n := e.node(t, "stuck-1")
		require.Equal(t, client.NodeStatusQueued, n.Status, "released back to its queue")
		require.Nil(t, n.Lease)
		require.EqualValues(t, 0, n.Attempts, "a release gives the attempt back")
		require.Equal(t, map[string]string{"runner-stuck": "released"}, e.assigned(t, "stuck-1"))
		require.Nil(t, e.waitWorker(t, "runner-stuck", "s-1", client.WorkerStatusOffline, "").Node)
		require.Contains(t, r.stderr.String(), "grace is over")
	})
}
