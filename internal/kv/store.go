package kv

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/logger"
)

// Options configure a Store.
type Options struct {
	Dir    string
	Logger *slog.Logger
	// InMemory keeps everything in memory (no durability); for short tests only.
	InMemory bool
	// MaxBatch bounds how many write closures share one commit.
	MaxBatch int
	// KeyInflight bounds the writes one fairness key (a tenant) may have
	// queued or running at once (default 64; see fairness.go).
	KeyInflight int
	// DiskReserve is the free space on Dir's filesystem below which writes
	// are refused (default DefaultDiskReserve; space.go).
	DiskReserve int64
	// Reopens says the caller calls Reopen before Start. Badger's records
	// replayed from the log at open are then flushed into its tables by
	// that reopen rather than by a close and open of their own: a start
	// after a crash opens Badger twice, not three times (each open makes
	// files; see recovery.go).
	Reopens bool
}

// Store is the storage engine's front: one writer goroutine applies every
// write; an engine (Badger with our log, or etcd) makes them durable and
// holds the committed state.
type Store struct {
	eng    engine
	log    *slog.Logger
	reqs   chan *request
	urgent chan *request // the reaper's lane: taken before any queued request
	done   chan struct{}
	closed chan struct{}  // the writer has stopped
	idle   chan struct{}  // the completer has answered everything
	commq  chan *inflight // writer -> logger
	applyq chan *inflight // logger -> applier
	once   sync.Once

	visMu   sync.Mutex
	visible []*inflight // durable, not yet applied: what View reads besides committed state
	shown   []*inflight // not yet durable, with writes shown early (shown.go), oldest first

	maxBatch int
	// maxKeys and maxBytes bound one closure's writes, maxValue one value
	// (the engine's limits).
	maxKeys, maxBytes, maxValue int64
	started                     atomic.Bool
	broken                      atomic.Bool
	stats                       Stats
	gates                       *gates
	// space refuses writes while the data directory's disk is full
	// (space.go); nil where there is no such disk (etcd, in memory).
	space *diskSpace

	// beforeDurable, in tests, runs on the logger before each group is made
	// durable (set before Start): a test holds it to look at the store
	// while writes are applied and not yet durable.
	beforeDurable func()

	pend    []*inflight // segments handed to the logger and not yet applied, oldest first; owned by the writer
	txnSeq  uint64      // the last write transaction's id (Txn.id); owned by the writer
	scratch txnScratch  // owned by the writer
}

// errBroken is a commit attempted once the store is broken.
var errBroken = errors.New("the store is broken")

// Stats are running totals of the write path, for metrics and benchmarks.
type Stats struct {
	Batches   atomic.Int64 // commits applying durable writes (Badger's behind the log; etcd's txns)
	Closures  atomic.Int64 // write transactions applied
	Syncs     atomic.Int64 // groups made durable: log appends with one fdatasync each, or etcd commits (group commit)
	SyncNanos atomic.Int64 // time spent in them
	Overtaken atomic.Int64 // pipelined etcd transactions a later one, carrying their writes, committed before
	Snapshots atomic.Int64 // snapshots of committed state the writer opened (Badger's wait for its commits in flight)
	Keys      atomic.Int64 // keys written (sets and deletes)
	Bytes     atomic.Int64 // bytes written (keys and values)
	DiskFull  atomic.Int64 // the disk guard's state: 0 writes taken, 1 writes refused but renewals, 2 every write refused (space.go)
	DiskFree  atomic.Int64 // free bytes on the data directory's filesystem at the guard's last look
	Refused   atomic.Int64 // writes refused because the disk is full
}

// Stats returns the write-path totals.
func (s *Store) Stats() *Stats { return &s.stats }

type request struct {
	ctx   context.Context
	fn    func(*Txn) error
	err   chan error
	eager bool // answered once applied, not once durable
	// show asks for the writes to be shown to readers once applied, when
	// they may be (shown.go); the caller is then answered at once.
	show bool
	// failed is the error of a closure that failed, answered once what it
	// read is durable (see answerFailed).
	failed error
	// durable, for a write that joined a Barrier, hears once it is durable
	// (nil also when it was not applied at all).
	durable chan error
}

// Open opens (or creates) the store in opts.Dir and applies what its log
// holds; Start starts the writer.
func Open(opts Options) (*Store, error) {
	opts.Logger = logger.OrDiscard(opts.Logger)
	e, err := openBadger(opts)
	if err != nil {
		return nil, err
	}
	return newStore(e, opts.Logger, opts.MaxBatch, opts.KeyInflight), nil
}

func newStore(e engine, log *slog.Logger, maxBatch, keyInflight int) *Store {
	if maxBatch <= 0 {
		maxBatch = 512
	}
	if keyInflight <= 0 {
		keyInflight = 64
	}
	s := &Store{
		eng:      e,
		log:      log,
		reqs:     make(chan *request, 4096),
		urgent:   make(chan *request, 64),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
		idle:     make(chan struct{}),
		commq:    make(chan *inflight, 1024),
		applyq:   make(chan *inflight, 1024),
		maxBatch: maxBatch,
		gates:    &gates{size: keyInflight},
	}
	s.maxKeys, s.maxBytes, s.maxValue = e.limits()
	e.attach(s)
	return s
}

// Reopen reopens the engine's committed state before Start: after a scan
// of every record, it lets go of what the scan mapped into memory (Badger's
// tables). An engine that maps nothing does nothing.
func (s *Store) Reopen() error {
	if s.started.Load() {
		return errors.New("kv: Reopen after Start")
	}
	return s.eng.reopen()
}

// Start starts the writer. Call it once the caller has rebuilt its in-memory
// state with View, before the first Update.
func (s *Store) Start() {
	if e, ok := s.eng.(*badgerEngine); ok && e.replayed {
		// New records must never follow replayed ones in the log, whose
		// end may be torn.
		panic("kv: Start before Reopen on a store opened with Options.Reopens")
	}
	s.started.Store(true)
	go s.writeLoop()
	if p, ok := s.eng.(pipeliner); ok && p.pipelineDepth() > 1 {
		go s.pipeLoop(p)
	} else {
		go s.logLoop()
	}
	go s.applyLoop()
	s.eng.start(s.done)
}

// Close stops accepting writes, finishes the ones queued, waits for their
// commits and closes the engine.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		if s.started.Load() {
			<-s.closed
			<-s.idle
		}
		err = s.eng.close(s.Healthy())
	})
	return err
}

// Update runs fn in a write transaction on the writer goroutine. If fn returns
// an error nothing it wrote is kept. Update returns once fn's writes, and
// every write before them, are durable and visible to View, so a caller
// always reads its own writes.
func (s *Store) Update(ctx context.Context, fn func(*Txn) error) error {
	return s.submit(ctx, s.reqs, false, fn, false)
}

// UpdateEager is Update for a write that need not be durable when its caller
// is answered, and that readers may see before it is durable (a lease
// renewal: on restart every live lease gets its full TTL afresh anyway, so
// a lost renewal takes nothing from what a reader was shown). It returns
// once fn has been applied, and its writes are shown to View at once; but
// when readers do not yet see a key it writes as fn found it (an earlier
// write to it is not durable yet), it is answered and shown once durable,
// like Update, so it never shows an earlier write early (shown.go). fn must
// rest its result on nothing but the keys it writes.
func (s *Store) UpdateEager(ctx context.Context, fn func(*Txn) error) error {
	return s.submit(ctx, s.reqs, true, fn, true)
}

// UpdateUrgent is Update for work that must not wait behind queued requests
// (settling expired leases): the writer takes it before the next queued one.
// It is eager (see UpdateEager): a settlement a crash loses is made again at
// restart.
func (s *Store) UpdateUrgent(ctx context.Context, fn func(*Txn) error) error {
	return s.submit(ctx, s.urgent, true, fn, false)
}

func (s *Store) submit(ctx context.Context, lane chan *request, eager bool, fn func(*Txn) error, show bool) error {
	if s.broken.Load() {
		return fault.ErrUnavailable
	}
	if s.space != nil {
		// Renewals and expiries (the eager writes) may use part of the
		// reserve that other writes may not.
		if err := s.space.refuse(eager); err != nil {
			return err
		}
	}
	req := &request{ctx: ctx, fn: fn, err: make(chan error, 1), eager: eager, show: show}
	b := barrierOf(ctx)
	if b != nil {
		req.eager = true
	}
	if key := FairnessKey(ctx); key != "" {
		gate := s.gates.of(key)
		select {
		case gate <- struct{}{}:
			defer func() { <-gate }()
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return fault.ErrUnavailable
		}
	}
	select {
	case <-s.done:
		return fault.ErrUnavailable
	default:
	}
	if b != nil {
		// Joined before it is queued: the writer answers it exactly once.
		req.durable = b.join()
	}
	select {
	case lane <- req:
	case <-s.done:
		req.settle(nil)
		return fault.ErrUnavailable
	case <-ctx.Done():
		req.settle(nil)
		return ctx.Err()
	}
	// The writer skips a request whose context ended before its turn; one that
	// ends later may still commit, as with any database.
	select {
	case err := <-req.err:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopped():
		// A request can reach the lane after the writer's last drain (the
		// send above may win over done in the select). Once the pipeline
		// has stopped, every request the writer took has been answered:
		// an unanswered one was never taken.
		select {
		case err := <-req.err:
			return err
		default:
			req.settle(nil)
			return fault.ErrUnavailable
		}
	}
}

// stopped is closed once the store is closing and the pipeline has answered
// every request it took; nil (never ready) before Start.
func (s *Store) stopped() <-chan struct{} {
	if !s.started.Load() {
		return nil
	}
	return s.idle
}

// View runs fn in a read-only transaction: the engine's committed state
// (a Badger snapshot; etcd at one revision), plus the writes that are
// durable and not yet applied, plus the writes shown before they are
// durable (UpdateEager's, shown.go). It holds every write acknowledged
// before it began, and nothing else that is not durable.
func (s *Store) View(fn func(*Txn) error) error {
	// Before the snapshot: a segment leaves visible only after the engine
	// holds it, so one that left before this copy is in the snapshot taken after.
	// A key may then be newer in the snapshot than in the copy only through
	// a write acknowledged after the copy; reads take the copy's (older,
	// durable) value, which was current when the View began. A segment
	// leaves shown as it enters visible, under the same lock, so each of its
	// shown writes is in one copy or the other.
	s.visMu.Lock()
	vis := slices.Clone(s.visible)
	early := slices.Clone(s.shown)
	s.visMu.Unlock()
	// The snapshot is opened on the first read that needs the engine (a
	// View that finds what it needs in memory never waits for its commits).
	t := &Txn{eng: s.eng, vis: vis, early: early}
	defer func() {
		if t.snap != nil {
			t.snap.discard()
		}
	}()
	return fn(t)
}

// Healthy reports whether the store takes writes.
func (s *Store) Healthy() bool { return !s.broken.Load() }

// Full is the fault a write gets now because the data directory's disk is
// full (*fault.DiskFull), or nil when writes are taken. It clears by
// itself once space is freed (space.go).
func (s *Store) Full() error {
	if s.space == nil {
		return nil
	}
	return s.space.err(false)
}

// fail marks the store broken after a write could not be committed.
func (s *Store) fail(err error) {
	if s.broken.CompareAndSwap(false, true) {
		s.log.Error("the store stopped taking writes", "err", err)
	}
}

// settle tells a Barrier that this write will not become durable (it was
// never applied, or it failed).
func (r *request) settle(err error) {
	if r.durable != nil {
		r.durable <- err
	}
}
