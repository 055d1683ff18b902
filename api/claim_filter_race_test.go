//go:build race

package api_test

// claimFilterReady is how many ready nodes TestQueueClaimFilterDoesNotScan
// creates: under -race fewer, as creating them is most of its time, and a
// scan of even these took over a second.
const claimFilterReady = 15000
