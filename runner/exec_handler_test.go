package runner

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// The Exec handler against a real server: exit 0 completes the node with
// stdout (JSON stays JSON), any other exit fails it with the end of stderr,
// a command that cannot start fails it saying so; the command gets the
// node's JSON on stdin and the run's settings in its environment.
func TestExecHandlerExitCodes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	out := t.TempDir()
	h := &Exec{Stderr: io.Discard, Argv: []string{"sh", "-c", `OUT='` + out + `'
		cat > "$OUT/$TETHER_NODE_ID.stdin"
		echo "$TETHER_NODE_ID $TETHER_FENCE $TETHER_WORKER $TETHER_URL $TETHER_TOKEN" > "$OUT/$TETHER_NODE_ID.env"
		case "$TETHER_NODE_ID" in
		ok) echo '{"answer": 42}';;
		text) printf 'plain text';;
		*) echo "first line" >&2; echo "boom: exit three" >&2; exit 3;;
		esac`}}
	b.start(b.config("exec", h))

	b.create(client.NodeCreate{ID: ptrTo("ok"), Queue: ptrTo("exec"), Props: &map[string]any{"x": 1}})
	n := b.waitStatus("ok", client.NodeStatusDone)
	require.Equal(t, map[string]any{"answer": float64(42)}, n.Result, "JSON stdout is the result as JSON")
	env, err := os.ReadFile(filepath.Join(out, "ok.env"))
	require.NoError(t, err)
	require.Equal(t, "ok 1 t-1 "+b.srv.URL+" "+b.token+"\n", string(env))
	raw, err := os.ReadFile(filepath.Join(out, "ok.stdin"))
	require.NoError(t, err)
	var stdin client.Node
	require.NoError(t, json.Unmarshal(raw, &stdin), "the node's JSON on stdin: %s", raw)
	require.Equal(t, "ok", stdin.ID)
	require.Equal(t, float64(1), stdin.Props["x"])

	b.create(client.NodeCreate{ID: ptrTo("text"), Queue: ptrTo("exec")})
	require.Equal(t, "plain text", b.waitStatus("text", client.NodeStatusDone).Result, "other stdout is a string")

	b.create(client.NodeCreate{ID: ptrTo("exit-3"), Queue: ptrTo("exec"), MaxAttempts: ptrTo(int64(1))})
	n = b.waitStatus("exit-3", client.NodeStatusDead)
	require.Equal(t, "first line\nboom: exit three", *n.Error, "the end of stderr is the error")
	require.Equal(t, map[string]string{"runner": "failed"}, b.outcomes("exit-3"))

	missing := &Exec{Stderr: io.Discard, Argv: []string{filepath.Join(out, "no-such-command")}}
	b.start(b.config("exec-missing", missing))
	b.create(client.NodeCreate{ID: ptrTo("missing"), Queue: ptrTo("exec-missing"), MaxAttempts: ptrTo(int64(1))})
	n = b.waitStatus("missing", client.NodeStatusDead)
	require.True(t, strings.HasPrefix(*n.Error, "the command could not start: "), *n.Error)
}
