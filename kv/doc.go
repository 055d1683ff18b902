// Package kv is Tether's storage engine: an ordered, transactional key-value
// store with one writer goroutine, group commit and durability. Badger is its
// engine. It knows nothing of nodes, edges or tenants beyond the fairness key
// a request carries (see fairness.go); the graph model lives above it.
//
// Invariants:
//   - Exactly one goroutine writes (Store.writeLoop). Each Update closure is a
//     layer of the writer's current batch: it reads its own writes, then the
//     batch's earlier layers, then a Badger snapshot; a closure that fails
//     leaves nothing behind, closures never conflict, and they apply in the
//     order the writer takes them.
//   - Durability goes through Badger's public API only: the store runs with
//     SyncWrites, so Badger fsyncs its write-ahead log before a commit
//     completes, and a commit becomes visible to readers (View) only once it
//     has completed. Nothing a reader sees can be lost by a power failure.
//   - Batch N is handed to Badger with CommitWith and the writer goes on with
//     batch N+1 at once (pipelined group commit). A snapshot for batch N+1 is
//     opened only when one of its closures reads a key that no layer holds,
//     and opening it waits for every earlier commit, so reads never miss a
//     write. Hot paths of the model above read from memory and never wait.
//   - Completions are processed in commit order (Store.completeLoop): a
//     request is answered, and its OnDurable hooks run, only after its own
//     batch and every earlier one are durable. OnApply hooks run on the writer
//     right after the closure succeeds, so the next closure sees their effect.
//   - A commit that fails stops the store from taking writes (Healthy is
//     false); a restart rebuilds everything from what is on disk.
//   - Opening removes zero-length *.mem files before Badger sees them: a crash
//     between a memtable rotation and the new file's first sync can leave one,
//     it can hold no data, and Badger refuses to open with it present.
package kv
