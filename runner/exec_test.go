package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestExecResultShapes(t *testing.T) {
	t.Parallel()
	ran := func(out string) exit { return exit{stdout: []byte(out), stdoutBytes: int64(len(out))} }
	enc := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, `{"a":[1,2]}`, enc(ran(" {\"a\": [1, 2]}\n").result(maxResult)), "JSON stays JSON")
	require.Equal(t, `42`, enc(ran("42\n").result(maxResult)))
	require.Equal(t, `"hello\n"`, enc(ran("hello\n").result(maxResult)), "text is a string, as written")
	require.Equal(t, `"{\"a\": "`, enc(ran(`{"a": `).result(maxResult)), "broken JSON is text")
	require.Nil(t, ran(" \n").result(maxResult), "no output, no result")

	long := strings.Repeat("é", 10) // 20 bytes
	got := ran(long).result(5)
	require.Equal(t, map[string]any{"truncated": true, "output_bytes": int64(20), "output": "éé"}, got,
		"truncated at a rune boundary, and says so")

	x := exit{stdout: bytes.Repeat([]byte("a"), maxResult), stdoutBytes: maxResult + 1}
	big := x.result(maxResult).(map[string]any)
	require.Equal(t, true, big["truncated"])
	require.Len(t, big["output"], maxResult)
}

func TestExecErrorText(t *testing.T) {
	t.Parallel()
	// A tail cut inside a rune starts with a broken byte: it is dropped.
	require.Equal(t, "ok\nboom", exit{stderrEnd: "\xa9ok\nboom\n\n"}.errorText())
	require.Equal(t, "the command ended: exit status 3", exit{how: "exit status 3"}.errorText())

	tail := &tail{max: 8}
	for _, s := range []string{"0123", "456789", "abcdefghijklmnop", "XY"} {
		_, _ = tail.Write([]byte(s))
	}
	require.Equal(t, "klmnopXY", string(tail.bytes()), "the last 8 bytes")

	head := &head{max: 4}
	_, _ = head.Write([]byte("abc"))
	_, _ = head.Write([]byte("defg"))
	require.Equal(t, "abcd", head.b.String())
	require.EqualValues(t, 7, head.n)
}

func TestExecStopsTheGroup(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	done := make(chan exit, 1)
	var stderr bytes.Buffer
	ready := filepath.Join(t.TempDir(), "ready")
	go func() {
		done <- runCommand(stop, []string{"sh", "-c", `cat; echo oops >&2; sleep 30 & touch "$READY"; wait`},
			[]string{"READY=" + ready, "PATH=" + os.Getenv("PATH")}, []byte("in\n"), &stderr, nil)
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(ready); return err == nil }, killAfter, 10*time.Millisecond,
		"the command and its child run")
	close(stop)
	select {
	case x := <-done:
		require.True(t, x.stopped)
		require.Equal(t, -1, x.code, "ended by a signal")
		require.Equal(t, "in\n", string(x.stdout))
		require.Equal(t, "oops\n", x.stderrEnd)
	case <-time.After(killAfter):
		t.Fatal("SIGTERM to the group did not end the command and its child")
	}

	x := runCommand(make(chan struct{}), []string{"sh", "-c", "exit 7"}, nil, nil, &stderr, nil)
	require.False(t, x.stopped)
	require.Equal(t, 7, x.code)
	require.Equal(t, "exit status 7", x.how)
}

func TestBackoffGrowsWithJitterUpToTheCap(t *testing.T) {
	t.Parallel()
	b := newBackoff(Backoff{Min: DefaultBackoffMin, Max: DefaultBackoffMax})
	prevMax := time.Duration(0)
	for i := range 12 {
		d := b.delay(0)
		ceiling := min(DefaultBackoffMin<<i, DefaultBackoffMax)
		require.GreaterOrEqual(t, d, ceiling/2, "attempt %d", i)
		require.LessOrEqual(t, d, ceiling, "attempt %d", i)
		prevMax = max(prevMax, d)
	}
	require.LessOrEqual(t, prevMax, DefaultBackoffMax)
	b.reset()
	require.LessOrEqual(t, b.delay(0), DefaultBackoffMin, "a success starts over")
	b.reset()
	require.Equal(t, 3*time.Second, b.delay(3*time.Second), "the server's Retry-After wins when longer")
}
