package kv

// Larger groups across shards: the stores of one cluster server (one per
// shard it owns, each with its own writer and guard) can share an
// EtcdBatcher, which sends what their loggers commit at the same moment as
// one etcd transaction, each store's writes in a nested transaction under
// its own guard:
//
//	Txn() Then( Txn(If(guard_1) Then(writes_1)),
//	            Txn(If(guard_2) Then(writes_2)), ... )
//
// A guard that is false fails its own store's part and nothing else; every
// part commits or none does (one raft entry), and each store still has at
// most one transaction in flight, so its commits keep its order. While one
// transaction is in flight the next gathers everything that arrives: under
// load, etcd gets fewer, larger transactions instead of one per shard,
// which is what it handles best when its members are short of CPU.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdBatcher sends the commits of several etcd stores as one transaction.
// Create it with NewEtcdBatcher, give it to each store (EtcdOptions.Batcher)
// and Close it once they are closed.
type EtcdBatcher struct {
	cli      *clientv3.Client
	maxOps   int
	maxBytes int
	timeout  time.Duration
	reqs     chan *batchedTxn
	stop     chan struct{}
	stopped  chan struct{}
	once     sync.Once

	// Sent counts the transactions sent, Parts the stores' transactions
	// they held.
	Sent, Parts int64
	mu          sync.Mutex

	// In tests: queued runs once a commit is queued, beforeSend before a
	// transaction of parts parts is sent (set before the first commit).
	queued     func()
	beforeSend func(parts int)
}

// batchedTxn is one store's transaction waiting for the batcher.
type batchedTxn struct {
	from  string // the store's key prefix: two parts of one prefix never share a transaction
	guard []clientv3.Cmp
	ops   []clientv3.Op
	count int // opsCount(ops)
	size  int
	res   chan batchResult
}

type batchResult struct {
	resp *pb.TxnResponse // the store's part: Succeeded is its guard
	err  error
}

// NewEtcdBatcher starts a batcher over cli. maxTxnOps and maxRequestBytes
// are etcd's limits (0: its defaults, 128 and 1.5 MiB); timeout bounds
// each transaction (0: 5 s).
func NewEtcdBatcher(cli *clientv3.Client, maxTxnOps, maxRequestBytes int, timeout time.Duration) *EtcdBatcher {
	if maxTxnOps <= 0 {
		maxTxnOps = 128
	}
	if maxRequestBytes <= 0 {
		maxRequestBytes = 3 << 19
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	b := &EtcdBatcher{
		cli: cli, maxOps: maxTxnOps, maxBytes: maxRequestBytes - min(64<<10, maxRequestBytes/8), timeout: timeout,
		reqs: make(chan *batchedTxn, 256), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	go b.loop()
	return b
}

// Close stops the batcher; commits sent after it fail. Closing its client
// stops it too.
func (b *EtcdBatcher) Close() {
	b.once.Do(func() { close(b.stop) })
	<-b.stopped
}

var errBatcherClosed = errors.New("the etcd batcher is closed")

// commit sends one store's guarded transaction with whatever else is
// waiting and returns its part of etcd's answer.
func (b *EtcdBatcher) commit(from string, guard []clientv3.Cmp, ops []clientv3.Op, size int) (*pb.TxnResponse, error) {
	r := &batchedTxn{from: from, guard: guard, ops: ops, count: opsCount(ops), size: size, res: make(chan batchResult, 1)}
	select {
	case b.reqs <- r:
	case <-b.stop:
		return nil, errBatcherClosed
	}
	if b.queued != nil {
		b.queued()
	}
	res := <-r.res
	return res.resp, res.err
}

func (b *EtcdBatcher) loop() {
	defer close(b.stopped)
	var held *batchedTxn
	for {
		first := held
		held = nil
		if first == nil {
			select {
			case first = <-b.reqs:
			case <-b.stop:
				b.drainClosed()
				return
			case <-b.cli.Ctx().Done():
				// The client is closed: nothing can be sent any more.
				b.once.Do(func() { close(b.stop) })
				b.drainClosed()
				return
			}
		}
		batch := []*batchedTxn{first}
		ops, size := first.count, first.size
	gather:
		for {
			select {
			case r := <-b.reqs:
				// Every part's operations, plus one per part, within one
				// transaction's limits.
				if ops+r.count+len(batch)+1 > b.maxOps || size+r.size > b.maxBytes || b.has(batch, r.from) {
					held = r
					break gather
				}
				batch = append(batch, r)
				ops, size = ops+r.count, size+r.size
			default:
				break gather
			}
		}
		b.send(batch)
	}
}

// has reports whether batch holds a part of the store at prefix from: etcd
// refuses a transaction that puts one key twice, and a store's pipelined
// transactions (or an old owner's and a new one's on this server) can.
func (b *EtcdBatcher) has(batch []*batchedTxn, from string) bool {
	for _, r := range batch {
		if r.from == from {
			return true
		}
	}
	return false
}

// drainClosed answers what is still queued once the batcher stops.
func (b *EtcdBatcher) drainClosed() {
	for {
		select {
		case r := <-b.reqs:
			r.res <- batchResult{err: errBatcherClosed}
		default:
			return
		}
	}
}

// send commits a batch as one transaction, tried again as a store's own
// commit is (etcdEngine.commit): each part is idempotent and its store has
// nothing else in flight.
func (b *EtcdBatcher) send(batch []*batchedTxn) {
	if b.beforeSend != nil {
		b.beforeSend(len(batch))
	}
	then := make([]clientv3.Op, len(batch))
	for i, r := range batch {
		then[i] = clientv3.OpTxn(r.guard, r.ops, nil)
	}
	resp, err := retryTxn(b.cli, b.timeout, nil, then)
	b.mu.Lock()
	b.Sent++
	b.Parts += int64(len(batch))
	b.mu.Unlock()
	for i, r := range batch {
		if err != nil {
			r.res <- batchResult{err: err}
			continue
		}
		part := resp.Responses[i].GetResponseTxn()
		if part == nil {
			r.res <- batchResult{err: fmt.Errorf("etcd answered a batched transaction without its part %d", i)}
			continue
		}
		r.res <- batchResult{resp: part}
	}
}

// retryTxn runs If(cmps) Then(ops) within timeout, trying again what etcd
// answers "unavailable" or what a quarter of the timeout does not answer.
func retryTxn(cli *clientv3.Client, timeout time.Duration, cmps []clientv3.Cmp, ops []clientv3.Op) (*clientv3.TxnResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	attempt := min(max(timeout/4, 500*time.Millisecond), timeout)
	var resp *clientv3.TxnResponse
	var err error
	for {
		actx, acancel := context.WithTimeout(ctx, attempt)
		resp, err = cli.Txn(actx).If(cmps...).Then(ops...).Commit()
		acancel()
		if err == nil || ctx.Err() != nil || !(transient(err) || errors.Is(err, context.DeadlineExceeded)) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
			continue
		}
		break
	}
	if err != nil {
		return nil, fmt.Errorf("error committing to etcd: %w", err)
	}
	return resp, nil
}
