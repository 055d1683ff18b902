package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWorkResultShapes(t *testing.T) {
	t.Parallel()
	exit := func(out string) workExit { return workExit{stdout: []byte(out), stdoutBytes: int64(len(out))} }
	enc := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, `{"a":[1,2]}`, enc(exit(" {\"a\": [1, 2]}\n").result(workMaxResult)), "JSON stays JSON")
	require.Equal(t, `42`, enc(exit("42\n").result(workMaxResult)))
	require.Equal(t, `"hello\n"`, enc(exit("hello\n").result(workMaxResult)), "text is a string, as written")
	require.Equal(t, `"{\"a\": "`, enc(exit(`{"a": `).result(workMaxResult)), "broken JSON is text")
	require.Nil(t, exit(" \n").result(workMaxResult), "no output, no result")

	long := strings.Repeat("é", 10) // 20 bytes
	got := exit(long).result(5)
	require.Equal(t, map[string]any{"truncated": true, "output_bytes": int64(20), "output": "éé"}, got,
		"truncated at a rune boundary, and says so")

	x := workExit{stdout: bytes.Repeat([]byte("a"), workMaxResult), stdoutBytes: workMaxResult + 1}
	big := x.result(workMaxResult).(map[string]any)
	require.Equal(t, true, big["truncated"])
	require.Len(t, big["output"], workMaxResult)
}

func TestWorkErrorText(t *testing.T) {
	t.Parallel()
	// A tail cut inside a rune starts with a broken byte: it is dropped.
	require.Equal(t, "ok\nboom", workExit{stderrTail: "\xa9ok\nboom\n\n"}.errorText())
	require.Equal(t, "the command ended: exit status 3", workExit{how: "exit status 3"}.errorText())

	tail := &workTail{max: 8}
	for _, s := range []string{"0123", "456789", "abcdefghijklmnop", "XY"} {
		_, _ = tail.Write([]byte(s))
	}
	require.Equal(t, "klmnopXY", string(tail.bytes()), "the last 8 bytes")

	head := &workHead{max: 4}
	_, _ = head.Write([]byte("abc"))
	_, _ = head.Write([]byte("defg"))
	require.Equal(t, "abcd", head.b.String())
	require.EqualValues(t, 7, head.n)
}

func TestWorkExecStopsTheGroup(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	done := make(chan workExit, 1)
	var stderr bytes.Buffer
	go func() {
		done <- workExec(stop, []string{"sh", "-c", `cat; echo oops >&2; sleep 30 & wait`}, nil, []byte("in\n"), &stderr, nil)
	}()
	time.Sleep(100 * time.Millisecond)
	close(stop)
	select {
	case x := <-done:
		require.True(t, x.stopped)
		require.Equal(t, -1, x.code, "ended by a signal")
		require.Equal(t, "in\n", string(x.stdout))
		require.Equal(t, "oops\n", x.stderrTail)
	case <-time.After(workKillAfter):
		t.Fatal("SIGTERM to the group did not end the command and its child")
	}

	x := workExec(make(chan struct{}), []string{"sh", "-c", "exit 7"}, nil, nil, &stderr, nil)
	require.False(t, x.stopped)
	require.Equal(t, 7, x.code)
	require.Equal(t, "exit status 7", x.how)
}

func TestWorkBackoffGrowsWithJitterUpToTheCap(t *testing.T) {
	t.Parallel()
	var b workBackoff
	prevMax := time.Duration(0)
	for i := range 12 {
		d := b.delay(0)
		ceiling := min(workBackoffMin<<i, workBackoffMax)
		require.GreaterOrEqual(t, d, ceiling/2, "attempt %d", i)
		require.LessOrEqual(t, d, ceiling, "attempt %d", i)
		prevMax = max(prevMax, d)
	}
	require.LessOrEqual(t, prevMax, workBackoffMax)
	b.reset()
	require.LessOrEqual(t, b.delay(0), workBackoffMin, "a success starts over")
	b.reset()
	require.Equal(t, 3*time.Second, b.delay(3*time.Second), "the server's Retry-After wins when longer")
}
