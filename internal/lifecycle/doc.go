// Package lifecycle owns a node's status: every change of it is one of the
// named transitions below, and nothing else writes Node.Status (graphstore's
// records and tests aside). Each transition checks the status it starts
// from, then does all of its bookkeeping in the caller's transaction: the
// status, attempts and fence, error, run_at and target, the run it ends
// (through Runs), the assigned edge, the node write and its events, and what
// follows from it (a child that ends without success failing its parent, a
// cancel reaching descendants and dependents).
//
// It is a package of its own, beside graphstore and below leasing and nodes,
// because both of those start transitions: leasing claims, releases and
// expires; nodes completes, fails, cancels, requeues and creates. Neither needs the other
// to do so, so nothing is wired after construction: ending a lease's
// in-memory views is the one thing a transition asks of the leasing package,
// through the Runs interface it is handed.
//
// The statuses and the transitions between them (Op, and the function of
// the same name):
//
//	(new) ──create──▶ open/queued ──claim──▶ running
//	                    ▲     ▲                 │
//	                    │     └─────────────────┤ release; expire or fail (retry) with attempts left
//	                    │                       ├─ complete ─────────────────────────▶ done
//	                    │                       ├─ fail (final), fail_for_child ─────▶ failed
//	                    │                       ├─ fail or expire, no attempts left ─▶ dead
//	                    │                       └─ cancel ───────────────────────────▶ cancelled
//	                    │
//	                    └── requeue (attempts = 0) ◀── failed, dead, cancelled, expired
//
//	open/queued ──lapse (start_by passed, never claimed)──▶ expired
//
// cancel and fail_for_child also start from open and queued; done is final.
//
// Invariants:
//   - Status is written only here. A transition asked from a status it
//     cannot start from (Legal) is an *IllegalTransition, changes nothing,
//     and unwraps to the fault the API has always answered with for that
//     refusal (not claimable, lease lost, or a conflict).
//   - A node holds a lease exactly while it is running: claim sets it, and
//     every transition out of running ends it (Runs.EndRun) before writing.
//   - An attempt is counted by claim and given back only by release.
//   - A node that ends failed, dead, cancelled or expired fails its parent when the
//     parent's on_child_fail is fail, in the same transaction, and the
//     parent's remaining children are cancelled; this repeats up the tree.
//   - Whether a node may be claimed is one rule, graphstore.Tx.ClaimRefusals,
//     defined beside the ready index that keeps its node part (not blocked,
//     queued); Claimable turns a refusal into the API's answer, naming what
//     blocks the node (Blocking) only when it refuses. Claim-next takes its
//     candidates from the index and claims each through the leasing package,
//     which applies the rule to the record it changes.
//   - start_by bounds the wait for the first run only: a claim and a
//     requeue clear it, and a node past it at rest (records.Node.Lapsed) is
//     refused by the claimable rule before Lapse has ended it.
//   - MoveQueue is no transition: a node at rest follows its queue (queued
//     in one, open without), any other keeps its status.
package lifecycle
