package netfault_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/netfault"
)

// helperEnv makes the test binary, run in a host's namespace, a helper
// program instead of the tests: "sink ADDR" or "send ADDR".
const helperEnv = "NETFAULT_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

// helper is a sink (UDP datagrams counted, the count served over TCP on the
// same port, one line per connection) or a sender (ten datagrams).
func helper(mode, addr string) int {
	switch mode {
	case "sink":
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		var got atomic.Int64
		go func() {
			buf := make([]byte, 64)
			for {
				if _, _, err := pc.ReadFrom(buf); err != nil {
					return
				}
				got.Add(1)
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return 1
			}
			fmt.Fprintf(c, "%d\n", got.Load())
			c.Close()
		}
	case "send":
		c, err := net.Dial("udp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for range 10 {
			_, _ = c.Write([]byte("x"))
		}
		return 0
	}
	return 2
}

// sink starts a sink on h and returns its address once it answers.
func sink(t *testing.T, n *netfault.Net, h *netfault.Host) string {
	addr := h.IP + ":7000"
	cmd := h.Command(os.Args[0], addr)
	cmd.Env = append(os.Environ(), helperEnv+"=sink")
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool { _, err := count(n, addr); return err == nil }, 10*time.Second, 20*time.Millisecond)
	return addr
}

// send sends ten datagrams from h to addr.
func send(t *testing.T, h *netfault.Host, addr string) {
	cmd := h.Command(os.Args[0], addr)
	cmd.Env = append(os.Environ(), helperEnv+"=send")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// count is how many datagrams the sink at addr has had, asked from the hub.
func count(n *netfault.Net, addr string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := n.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(line))
}

// A cut drops only what it names: one direction, or both, between two
// hosts, while the hub reaches both; healing lets everything through again.
func TestCutDropsOneDirectionOrBoth(t *testing.T) {
	t.Parallel()
	n := netfault.New(t)
	a, b := n.Host("a"), n.Host("b")
	toA, toB := sink(t, n, a), sink(t, n, b)

	// received is how many datagrams the sink at addr had more than before.
	received := func(addr string, before *int) int {
		c, err := count(n, addr)
		require.NoError(t, err, "the hub reaches every host whatever is cut")
		d := c - *before
		*before = c
		return d
	}
	var atA, atB int
	// A datagram that gets through is counted a moment after its sender
	// exits: require.Eventually waits for it. One dropped is never counted;
	// the zero checks, made after a round trip from the hub, would see one
	// that leaked through on the bridge almost always.
	through := func(addr string, before *int) {
		require.Eventually(t, func() bool { return received(addr, before) > 0 }, 5*time.Second, 20*time.Millisecond)
	}

	send(t, b, toA)
	through(toA, &atA)

	heal := a.Cut(netfault.Out, b)
	send(t, b, toA)
	through(toA, &atA) // what a receives still arrives
	send(t, a, toB)
	require.Zero(t, received(toB, &atB), "a sent to b through a cut of what a sends")
	heal()
	send(t, a, toB)
	through(toB, &atB)

	heal = a.Cut(netfault.In, b)
	send(t, a, toB)
	through(toB, &atB) // what a sends still arrives
	send(t, b, toA)
	require.Zero(t, received(toA, &atA), "b reached a through a cut of what a receives")
	heal()
	send(t, b, toA)
	through(toA, &atA)

	heal = a.Cut(netfault.Both, b)
	send(t, a, toB)
	send(t, b, toA)
	require.Zero(t, received(toA, &atA)+received(toB, &atB), "a datagram crossed a cut both ways")
	heal()
	send(t, b, toA)
	send(t, a, toB)
	through(toA, &atA)
	through(toB, &atB)
}
