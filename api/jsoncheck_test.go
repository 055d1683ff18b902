package api

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/nodes"
)

// TestBodyChecksDoNotAllocate pins the cost the input rules add to every
// request: the body scan and the duration check allocate nothing when the
// body is fine.
func TestBodyChecksDoNotAllocate(t *testing.T) {
	body := []byte(`{"fence":12,"result":{"ok":true,"list":[1,2,"x\u00e9"]},"usage":{"a":1}}`)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if err := checkJSON(body); err != nil {
			t.Fatal(err)
		}
	}))
	ttl := int64(60000)
	claim := &claimBody{TTLMS: &ttl}
	spec := &nodes.NodeSpec{Type: "t", TimeoutMS: &ttl}
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if checkDurations(claim) != nil || checkDurations(spec) != nil {
			t.Fatal("in range")
		}
	}))
}
