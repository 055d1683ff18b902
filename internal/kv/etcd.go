package kv

// Engine 2: etcd holds the data. A group of segments is durable once etcd
// has committed it (raft quorum and fsync): one guarded transaction when it
// fits etcd's limits, else a log of our own in etcd (etcd_log.go).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether-run/tether/internal/logger"
)

// EtcdOptions configure a Store whose records live in etcd.
type EtcdOptions struct {
	Client *clientv3.Client
	// Prefix is where the store lives: every key is stored as Prefix + "d/"
	// + key, the commit log (etcd_log.go) under Prefix + "log/".
	Prefix string
	// Guard is compared in every write's transaction (ownership, say
	// CreateRevision(electionKey) = rev); nil writes unguarded (tests of
	// the engine only).
	Guard []clientv3.Cmp
	// OnDeposed runs once, on a goroutine of its own, when a write finds
	// Guard false: the store is broken from then on.
	OnDeposed func()
	// MaxTxnOps is the most operations one etcd transaction may hold
	// (default 128, etcd's --max-txn-ops).
	MaxTxnOps int
	// MaxRequestBytes is the largest request etcd takes (default 1.5 MiB,
	// etcd's --max-request-bytes); the store keeps some headroom below it.
	MaxRequestBytes int
	// Timeout bounds every etcd call (default 5 s); a commit that times out
	// breaks the store.
	Timeout time.Duration
	// Pipeline is how many groups' commits may be in flight at once
	// (etcd_pipeline.go); 1, the default, commits one group at a time, the
	// next group gathering what arrives meanwhile.
	Pipeline int
	// Batcher, when set, sends this store's commits together with other
	// stores' (etcd_batcher.go); nil sends each on its own.
	Batcher     *EtcdBatcher
	Logger      *slog.Logger
	MaxBatch    int
	KeyInflight int
}

// ErrDeposed is a write whose transaction found the store's guard false:
// another owner holds the store.
var ErrDeposed = errors.New("the store's guard failed: it has another owner")

// etcdEngine keeps the store in etcd.
type etcdEngine struct {
	cli       *clientv3.Client
	data      string // Prefix + "d/": where keys live
	logp      string // Prefix + "log/": the commit log of groups too large for one transaction
	chain     string // Prefix + "chain": its version orders pipelined transactions (etcd_pipeline.go)
	guard     []clientv3.Cmp
	batcher   *EtcdBatcher
	onDeposed func()
	deposed   sync.Once
	txnOps    int // the writes one transaction carries: etcd's --max-txn-ops less the guard, the chain's put and a batcher's nesting
	maxBytes  int // what one transaction's operations may take
	timeout   time.Duration
	s         *Store
	log       *slog.Logger
	leases    leaseCache
	bucket    int64  // the width of a lease's expiry bucket, seconds (60)
	seq       uint64 // the next log record; only the logger uses it
	pipe      pipeState

	// hook, in tests, runs between the steps of a logged commit ("chunks":
	// every chunk written; "marked": the marker written); an error stops
	// the commit there, as a crash would.
	hook func(step string) error
	// chainHook, in tests, runs in a pipelined transaction's goroutine
	// before each time it is sent ("send"; it may change t.ops) and when
	// etcd found the chain short of it ("short").
	chainHook func(step string, t *chainedTxn)
}

// maxLogRecord bounds one logged segment; a closure larger than its share
// is refused (Store.maxBytes).
const maxLogRecord = 64 << 20

// OpenEtcd opens a Store whose records live in etcd under Prefix. Every
// write carries Guard in its transaction; when the guard fails the store
// breaks (Healthy false, writes ErrUnavailable) and OnDeposed runs once.
// Opening replays the commit log a previous owner left: every record with
// its marker is applied, in order; chunks without one are deleted. A guard
// that fails while opening is an error wrapping ErrDeposed (OnDeposed does
// not run for it).
func OpenEtcd(opts EtcdOptions) (*Store, error) {
	if opts.Client == nil {
		return nil, errors.New("kv.OpenEtcd needs a client")
	}
	opts.Logger = logger.OrDiscard(opts.Logger)
	if opts.MaxTxnOps <= 0 {
		opts.MaxTxnOps = 128
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = 3 << 19 // 1.5 MiB
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Pipeline <= 0 {
		opts.Pipeline = defaultPipeline
	}
	headroom := min(64<<10, opts.MaxRequestBytes/8)
	e := &etcdEngine{
		cli:      opts.Client,
		data:     opts.Prefix + "d/",
		logp:     opts.Prefix + "log/",
		chain:    opts.Prefix + "chain",
		guard:    opts.Guard,
		batcher:  opts.Batcher,
		txnOps:   opts.MaxTxnOps - max(len(opts.Guard), 1) - 2,
		maxBytes: opts.MaxRequestBytes - headroom,
		timeout:  opts.Timeout,
		log:      opts.Logger,
		bucket:   60,
		pipe:     pipeState{depth: opts.Pipeline},
	}
	s := newStore(e, opts.Logger, opts.MaxBatch, opts.KeyInflight)
	if err := e.replay(); err != nil {
		return nil, fmt.Errorf("error replaying the commit log in etcd at %s: %w", e.logp, err)
	}
	if opts.Pipeline > 1 {
		if err := e.readChain(); err != nil {
			return nil, err
		}
	}
	// Set only now: a guard that fails while opening is OpenEtcd's error.
	e.onDeposed = opts.OnDeposed
	return s, nil
}

func (e *etcdEngine) attach(s *Store) { e.s = s }

// limits: a closure may write what one log record holds; one value must fit
// one transaction (with its key).
func (e *etcdEngine) limits() (int64, int64, int64) {
	return maxLogRecord / 32, maxLogRecord * 8 / 10, int64(e.maxBytes) - 4096
}

func (e *etcdEngine) applyEvery() time.Duration { return 0 }

func (e *etcdEngine) start(<-chan struct{}) {}

func (e *etcdEngine) reopen() error { return nil }

func (e *etcdEngine) close(bool) error { return nil }

// ctx is the context of one etcd call.
func (e *etcdEngine) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.timeout)
}

// commitOps runs ops in one transaction guarded by the store's guard (see
// commit).
func (e *etcdEngine) commitOps(ops []clientv3.Op) error {
	_, err := e.commit(ops)
	return err
}

// commit runs ops in one transaction guarded by the store's guard and
// returns etcd's answer to them; a false guard is ErrDeposed. A
// transaction etcd answers "unavailable" (a member lost, a leader change),
// or that a quarter of the timeout does not answer (a proposal lost with
// the leader it went to, which etcd reports only after its own request
// timeout), is tried again until the timeout. So a transaction may run
// twice; that is harmless: an unchained one runs only when no other
// transaction of the store is in flight, raft keeps a lost attempt, if it
// survives, before its retry, and the second run writes what the first
// did, or finds the guard false; a chained one (etcd_pipeline.go) writes
// at most once, its chain compare refusing a second run (which then counts
// as committed). With a Batcher the transaction is one part of the
// batcher's, which is tried again the same way.
func (e *etcdEngine) commit(ops []clientv3.Op) (*clientv3.TxnResponse, error) {
	var resp *clientv3.TxnResponse
	var err error
	if e.batcher != nil {
		var part *pb.TxnResponse
		part, err = e.batcher.commit(e.data, e.guard, ops, opsSize(ops))
		resp = (*clientv3.TxnResponse)(part)
	} else {
		resp, err = retryTxn(e.cli, e.timeout, e.guard, ops)
	}
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		e.deposed.Do(func() {
			e.log.Warn("the store's guard failed: another owner holds it")
			if e.onDeposed != nil {
				go e.onDeposed()
			}
		})
		return nil, ErrDeposed
	}
	return resp, nil
}

// opsSize is about what ops take in a request, nested transactions' too.
func opsSize(ops []clientv3.Op) int {
	n := 0
	for _, op := range ops {
		if op.IsTxn() {
			_, then, els := op.Txn()
			n += opsSize(then) + opsSize(els) + 64
			continue
		}
		n += len(op.KeyBytes()) + len(op.ValueBytes()) + 16
	}
	return n
}

// opsCount is how many operations ops hold, nested transactions' too.
func opsCount(ops []clientv3.Op) int {
	n := 0
	for _, op := range ops {
		if op.IsTxn() {
			_, then, els := op.Txn()
			n += 1 + max(opsCount(then), opsCount(els))
			continue
		}
		n++
	}
	return n
}

// transient reports whether etcd's answer means "try again": no leader, a
// leader change, a member that cannot be reached.
func transient(err error) bool {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.Unavailable
}
