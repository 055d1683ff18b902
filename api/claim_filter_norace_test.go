//go:build !race

package api_test

// claimFilterReady is how many ready nodes TestQueueClaimFilterDoesNotScan
// creates: the size of queue at which a scan took half a second.
const claimFilterReady = 50000
