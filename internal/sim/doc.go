// Package sim is a deterministic simulation of the lease core: the graph
// store (graphstore), the lease service with its reaper (leasing) and the
// node service (nodes), opened as internal/core opens them, over kv's
// in-memory engine on a MemDisk that can fail a write, stall a sync, and
// lose power with a group in flight. It is driven by a test (sim_test.go)
// inside a testing/synctest bubble: every timer (lease TTLs, the reaper,
// the engine's sync delays) runs on fake time, so hours pass in a second.
//
// A run is one seed. Each step sleeps a seeded pause (expiries happen and
// the reaper runs meanwhile), then takes one seeded step: a create, claim,
// renewal, release or completion by a holder or by a stale or wrong
// caller (steps.go); a power cut, half the time with an operation
// mid-sync, keeping a seeded prefix of the group in flight; a failed
// write (the store breaks and is restarted); a clean restart; a new sync
// delay. A restart reopens the layers on what the disk holds, so the
// derived state and the lease heap are rebuilt from the records.
//
// The model (model.go) holds what the clients were told, and nothing
// else; an unanswered operation (the store unavailable) may or may not
// have happened. After each step, with the bubble idle and every write
// applied also synced, the invariants are checked (answers.go on each
// answer, check.go on the state):
//   - at most one live lease per node: no lease is granted while another
//     holder was told its lease is live, in the derived held-lease index
//     no node is under two holders, and it and the lease counts agree
//     with the records;
//   - fences strictly rise per node, across restarts: a grant's fence is
//     above every fence granted or stored before it;
//   - nothing acknowledged is lost: an acknowledged create's node exists,
//     a completion's node stays done, and a lease stays live with its
//     holder and fence until the expiry its holder was last told (a lost
//     renewal is made good by the restart's TTL afresh);
//   - a node never runs more than max_attempts times;
//   - the derived state served equals a rebuild from the records
//     (graphstore.CheckLive, tether check's logic).
//
// Determinism: the schedule comes only from the seed's generator (no map
// order, no real time), and the bubble is idle whenever the driver acts,
// so a seed replays exactly; each run hashes its trace (Result.Digest)
// and a test runs seeds twice to hold it to that. A failure prints
// seed=N step=K, the replay command and the trace before it.
package sim
