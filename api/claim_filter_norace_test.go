//go:build !race

package api_test

import "time"

// claimFilterReady is how many ready nodes TestQueueClaimFilterDoesNotScan
// creates: the size of queue at which a scan took half a second.
const claimFilterReady = 50000

// longWait is a wait_ms that must be waited out, and quickBound what an
// answer that does not wait stays under.
const (
	longWait   = 300 * time.Millisecond
	quickBound = 250 * time.Millisecond
)
