// Package testsignal lets a server component tell a test "I ran" without
// the test sleeping, after River's testsignal. A Signal is off (one atomic
// load, nothing sent) until a test calls Init; from then on every Signal
// call is buffered for the test's Wait.
//
// Invariants:
//   - Production code never calls Init, so a Signal costs one atomic load.
//   - Signal never blocks the service: a test that lets more than the
//     buffer's worth pile up fails instead.
//   - Init may come before or after the service starts (it is atomic); a
//     test that enables a signal late waits for the value it needs, not for
//     the next one.
//
// Its users, each a TestSignals field of the component:
//
//	the background services (package startstop):
//	  leasing.Service       Reaped   a reap, once readers see it (its count)
//	  retention.Cleaner   Passed   a timed pass (its error)
//	  blob.Service        Swept    a timed sweep (what it collected)
//	  schedule.Service    Idle     the firing loop sleeps (towards when)
//	                      Fired    a pass made fires (of which schedules)
//	  message.Service     Swept    a timed expiry sweep (the next one due)
//	requests:
//	  nodes.Service       Parked   a claim-next long poll waits (its queue)
//	  api.Server      Waiting  a waiting request holds its place (its subject)
//	                      Served   a request is answered, counted, logged
//	the test filesystem:
//	  lazyfs.FS           Released the kernel's last close of a file arrived
package testsignal
