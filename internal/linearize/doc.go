// Package linearize checks recorded histories of lease calls against a
// sequential model of a node's lease, with porcupine
// (github.com/anishathalye/porcupine). The process tests in cmd/tether drive
// a real `tether serve` over HTTP, record every call here, and ask Check
// whether some order of the calls, each placed at one instant between its
// call and its return, explains every answer.
//
// The model (one per node; histories are partitioned by node) is the
// contract of API.md §6–7 and the invariants of package leasing:
//
//	           claim (fence = last+1, attempts+1)
//	queued ─────────────────────────────────────▶ running(holder, fence, expiry)
//	  ▲                                             │
//	  │ release by the holder (attempt given back)  │
//	  ├─────────────────────────────────────────────┤
//	  │ expiry (attempt kept; dead when out of them)│
//	  └─────────────────────────────────────────────┤
//	                                                │ complete by the holder
//	                                                └───────────▶ done (for ever)
//
// Beyond the diagram:
//   - A claim of a running node by another identity is a conflict naming the
//     holder; by the holder it renews the lease, same fence. A claim of a
//     done or dead node is not_claimable.
//   - A renew, release or complete by anyone but the holder, or with a fence
//     that is not the lease's, is refused (lease_lost; a release of another's
//     live lease is a conflict) and changes nothing. A release with no lease
//     held succeeds and changes nothing; a complete retried by the identity
//     that completed the node (same fence, or none) succeeds and changes
//     nothing.
//   - A read shows the state as of its instant: status, holder, fence,
//     attempts, and the lease's expiry. Reads are linearizable, renewals
//     included: a read that starts after a renewal's answer shows the expiry
//     that answer named (or a later one), never an older one.
//   - A granted claim or renewal names the lease's expiry: now + TTL at an
//     instant of the call (within Config.Margin), and from then on the model
//     knows the expiry to the millisecond the answer named, and holds every
//     read to it exactly (both come from the server's clock).
//
// Time: a lease ends at an instant the model knows only to within the
// interval of the call that set it (plus Config.Margin). A call that lies
// wholly before that window sees the lease live, one wholly after sees it
// expired, and one that overlaps it may see either; an expiry is settled
// before the call acts, as the server does. A read may show a lapsed lease for
// Config.ReaperSlack more, until the reaper settles the stored record.
//
// Unknown outcomes: a call that got no answer (its server was killed, the
// connection broke) may have taken effect or not, at any instant from its call
// until its server was known dead (Recorder.Died); the model allows both. A
// read without an answer, or a call sent to a server already dead, says
// nothing and is dropped.
//
// Restarts: a kill -9 and the restart after it are an operation of their own
// on every node, between the death of the old server and the readiness of the
// new one. It gives a live lease its full TTL afresh (never less than it had)
// and keeps everything else: an acknowledged claim, release or complete is
// never lost, and fences never go back.
//
// Invariants of the package:
//   - Step is pure and total: every (state, input, output) gives the set of
//     states the node may be in after it, empty when the answer is impossible.
//   - The model is strict where the contract is: fences are the node's last
//     fence + 1 (package leasing documents it), so a reused, skipped or
//     regressed fence is illegal; an acknowledged renewal is honoured up to
//     its expiry across restarts.
//   - The model's own test feeds it illegal histories (two holders, a reused
//     fence, a lost completion, a frozen holder's late write accepted, a read
//     after a renewal's answer that shows the expiry before it) and requires
//     porcupine to reject each.
package linearize
