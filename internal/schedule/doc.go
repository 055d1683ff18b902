// Package schedule is Tether's scheduler: per-tenant schedules that create
// a node (and a chain of follow-up nodes) from a template whenever their
// cron expression or one-shot instant comes round, with overlap control,
// catch-up after downtime, a failure backoff, jitter, pause and resume,
// manual triggers and a run history.
//
// A schedule is a record (graphstore.SchedulePut, key H|t|id) holding its
// settings and its firing state: the nominal instant of its next fire, the
// newest run (which overlap looks at), the runs whose outcome the failure
// count still waits for, and that count. Each fire adds a run record
// (graphstore.ScheduleRunPut, key h|t|id|seq): the nodes it made, or why it made
// none. A run's status, attempts, error and result are read from its nodes
// when asked, never copied.
//
// A schedule's life:
//
//	          create (enabled)               pause
//	(none) ──────────────────▶ enabled ◀──────────────▶ paused
//	                            │   ▲       resume
//	               fire (cron)  └───┘        (next fire from now;
//	                                          paused fires are not made)
//	enabled/paused ── delete ──▶ (none)
//	one-shot (at) ── its run made (fired or triggered) ──▶ (none)
//
// Timing (timing.go): cron expressions (five fields, or six with a leading
// seconds field, or @hourly and the other descriptors) are read as wall
// clock times in the schedule's IANA time zone, and each wall-clock time
// fires once: one that does not exist (the spring-forward gap) fires at
// the first instant after the gap, one that occurs twice (the fall-back
// hour) at its first occurrence only. @every <duration> fires at the
// multiples of the duration since the Unix epoch, so daylight saving never
// moves it. jitter_ms delays each fire by an amount derived from the
// schedule and the instant, so a restart or a preview never changes it.
//
// A fire (fire.go), in one transaction with the schedule's record:
//  1. the runs that ended since the last pass enter the failure count, in
//     fire order: done resets it, failed or dead adds one, cancelled or
//     deleted counts neither way. A run is over once its first node that is
//     not done is terminal (a chain step after a failed one can never run:
//     its depends_on edge holds it); such stranded steps are cancelled
//     then, so that no queued run waits on them;
//  2. fires older than the catch-up window are recorded as skipped
//     (missed); of the others, catchup one runs only the latest (the rest
//     are coalesced into it), catchup all runs each (at most
//     MaxCatchupRuns);
//  3. a fire before the backoff instant (the last failure's end plus
//     backoff_ms[n-1] after n failures in a row, the last step repeating)
//     is skipped (backoff);
//  4. while the last run is not over, overlap decides: skip records a
//     skipped fire; queue makes a run whose first node depends on the
//     last run's unfinished nodes (on_fail: ignore, so a failed run does
//     not cancel the next); allow makes one beside it; buffer_one queues
//     one, and skips while a run already waits behind another; cancel_other
//     cancels the last run's unfinished nodes (and with them their chains),
//     then makes one;
//  5. the run's nodes are made from the template and the chain, each chain
//     step depending on the step before it (on_fail: cancel), created by
//     schedule:<id> with their created events;
//  6. the next fire instant is stored, and the loop is told (commit hook).
//
// Invariants:
//   - A fire, its nodes, their events, its run record and the schedule's
//     next fire instant commit in one transaction: across a crash a fire is
//     either made with all of it or not at all, so it is never lost (an
//     unmade fire is still due at restart, within the catch-up window) and
//     never doubled (a made fire moved the next fire instant past it).
//   - A run is at most MaxChain+1 nodes deep; cancelling its first node
//     cancels the chain (the depends_on edges cascade).
//   - Every write to a schedule record tells the firing loop, in its commit
//     hook, when the schedule is next due, so the heap follows the records
//     in commit order; a stale wake-up finds nothing due and writes nothing.
//   - The loop sleeps on the injected clock: tests move a fake clock and the
//     fires follow. Stop lets a fire in progress finish; none is half made.
//     The loop is a startstop service, and each time it goes to sleep it
//     tells a test the instant it sleeps towards (TestSignals.Idle), so a
//     test that something did not fire waits for that, never sleeps; each
//     pass that made fires tells which schedules it fired
//     (TestSignals.Fired).
//   - A schedule keeps at most HistoryLimit run records: each new one drops
//     the oldest beyond it. A row of fires skipped for one reason is one
//     record (count, first and last instants).
//   - Every record lives under its tenant's keys, so a tenant sees only its
//     own schedules, and their runs make nodes in that tenant only.
package schedule
