//go:build race

package api_test

import "time"

// claimFilterReady is how many ready nodes TestQueueClaimFilterDoesNotScan
// creates: under -race fewer, as creating them is most of its time, and a
// scan of even these took over a second.
const claimFilterReady = 15000

// longWait is a wait_ms that must be waited out, and quickBound what an
// answer that does not wait stays under.
const (
	longWait   = 1500 * time.Millisecond
	quickBound = 1000 * time.Millisecond
)
