package kv

import "time"

// engine is what differs between storage engines below the Store's writer,
// segments and overlays: where committed state is read from, how a group of
// segments becomes durable and how it is applied. The Store calls durable
// and apply from one goroutine each, in commit order; readers may be opened
// from any goroutine.
type engine interface {
	// attach gives the engine the Store it serves (its stats, its broken
	// flag, its logger), before any other call.
	attach(s *Store)
	// limits are the most keys and bytes one closure may write (a larger
	// one is refused; a segment is handed on at half of them) and the
	// largest value one key may hold.
	limits() (maxKeys, maxBytes, maxValue int64)
	// reader opens a read of committed state: everything applied so far
	// (the writer and View shadow the rest with their overlays).
	reader() reader
	// snapshotReader opens a reader fixed at one instant, now: called under
	// the lock that moves segments out of the readers' view.
	snapshotReader() (reader, error)
	// durable makes a group of segments durable, in order. An engine that
	// applies a segment as it makes it durable marks it done.
	durable(group []*inflight) error
	// apply writes durable segments into committed state, in order, and
	// marks them done.
	apply(group []*inflight) error
	// applyEvery is the least time between two applies.
	applyEvery() time.Duration
	// reopen lets go of what reads have mapped into memory, before start
	// (Badger: closed and opened again; etcd: nothing).
	reopen() error
	// start starts the engine's own background work; it stops at done.
	start(done <-chan struct{})
	// close releases the engine once the pipeline has stopped; healthy
	// says every durable segment was applied.
	close(healthy bool) error
}

// reader reads committed state.
type reader interface {
	get(key []byte) ([]byte, bool, error)
	has(key []byte) (bool, error)
	// scan walks the live keys with prefix, in order or reverse order,
	// starting strictly after `after` when it is non-nil.
	scan(prefix, after []byte, reverse, withValues bool) cursor
	discard()
}

// cursor is one scan of a reader. Expired and deleted keys are skipped.
type cursor interface {
	valid() bool
	// key is the current key, valid until next.
	key() []byte
	// value is the current value (a copy the caller may keep).
	value() ([]byte, error)
	// expiresAt is the current key's expiry, unix seconds (0: none).
	expiresAt() uint64
	next()
	// err is the error that ended the scan early, if any.
	err() error
	close()
}
