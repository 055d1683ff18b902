package kv

// Pipelined commits on etcd: a shard's store keeps up to Pipeline groups'
// transactions in flight at once, instead of waiting for each commit before
// it sends the next, so the writes that queue behind a commit no longer
// wait for it (etcd batches what arrives together into one raft round).
//
// etcd does not keep the order in which one client sends transactions: each
// is a call of its own, the client spreads them over the members, a
// follower forwards its own to the leader, and a loaded member's handlers
// reach raft in any order (measured: half of them overtook the one before).
// So a transaction never depends on arriving in order. The n-th
// transaction begun carries its own writes and those of every transaction
// before it not yet known committed, merged in order (later writes win),
// and sets one key, Prefix + "chain", to n:
//
//	If(guard) Then( Txn( If(Value(chain) < n)
//	                     Then(writes of n and of its open predecessors, Put(chain, n))
//	                     Else(Get(chain)) ) )
//
// Hence etcd always holds a prefix of the writer's sequence, and chain
// names its last transaction:
//   - n commits only if nothing at or after n has (chain < n), on top of a
//     prefix that ends at or after what n left out as known committed; what
//     n carries brings it to exactly the prefix through n;
//   - n finding chain ≥ n was overtaken by a later one that carried its
//     writes: it is durable, nothing is sent again;
//   - a transaction that fails (guard false, timeout, no quorum, refused)
//     is never missing under a later one: each later one carries its
//     writes, so commits them with its own or fails too. The store breaks
//     at the first failure and answers every later group unavailable
//     (Store.pipeLoop answers groups in order, each only once it and every
//     earlier one committed), as it answers a timed-out commit today: it
//     may be in etcd, and a new owner reads whatever prefix is;
//   - the guard is in every transaction, evaluated by etcd at commit, so a
//     deposed owner's transaction fails whatever else is in flight.
//
// What carrying costs: a transaction grows with the writes in flight before
// it (bounded by Pipeline, and by one transaction's limits: when they would
// not fit, the logger waits for the oldest to commit). Sending in order
// (each after the one before it was sent) keeps overtaking rare.
//
// A group with a segment too large for one transaction (the commit log,
// etcd_log.go) is a barrier: it waits for everything in flight, commits
// alone, and nothing after it begins before it is done; it does not move
// the chain.

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// defaultPipeline is EtcdOptions.Pipeline's default: one group at a time.
// On the 2-core machine of BENCHMARKS.md, where etcd's members are short of
// CPU rather than waiting on the network or the disk, more in flight was
// slower at every depth tried (docs/etcd.md §5).
const defaultPipeline = 1

// errPredecessor is a group given up because one before it failed.
var errPredecessor = errors.New("an earlier transaction of the store failed")

// pipeState is the engine's side of the pipeline; only the logger touches
// it.
type pipeState struct {
	depth int
	seq   uint64        // the last transaction begun (chain's value once it commits)
	open  []*chainedTxn // begun and not known committed, oldest first
}

// chainedTxn is one pipelined transaction.
type chainedTxn struct {
	seq  uint64
	over *overlay // its own writes (nil: none)
	ops  []clientv3.Op
	segs []*inflight   // marked done once it committed
	sent chan struct{} // closed as it is first sent: the next one is sent after it
	done chan struct{}
	err  error // set before done is closed
}

func (t *chainedTxn) finished() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *chainedTxn) wait() error {
	<-t.done
	return t.err
}

// chainValue is the chain's value for transaction seq: fixed width, so
// etcd's byte order is the numbers' order.
func chainValue(seq uint64) string { return fmt.Sprintf("%020d", seq) }

// readChain reads the chain at open (writing it when there is none yet:
// etcd's compare of a missing key's value is always false): the first
// transaction follows it.
func (e *etcdEngine) readChain() error {
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.cli.Get(ctx, e.chain)
	if err != nil {
		return fmt.Errorf("error reading the commit chain at %s: %w", e.chain, err)
	}
	if len(resp.Kvs) == 0 {
		if err := e.commitOps([]clientv3.Op{clientv3.OpPut(e.chain, chainValue(0))}); err != nil {
			return fmt.Errorf("error starting the commit chain at %s: %w", e.chain, err)
		}
		return nil
	}
	seq, err := strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return fmt.Errorf("the commit chain at %s holds %q: %w", e.chain, resp.Kvs[0].Value, err)
	}
	e.pipe.seq = seq
	return nil
}

func (e *etcdEngine) pipelineDepth() int { return e.pipe.depth }

// prune forgets the open transactions known committed: everything up to
// the last one that finished without error (it carried the rest).
func (p *pipeState) prune() {
	n := 0
	for i, t := range p.open {
		if t.finished() && t.err == nil {
			n = i + 1
		}
	}
	clear(p.open[:n])
	p.open = p.open[n:]
}

// begin starts making group durable and returns what waits for the outcome.
// Called by the logger alone, in commit order.
func (e *etcdEngine) begin(group []*inflight) func() error {
	start := time.Now()
	for _, f := range group {
		if !e.fits(f.over.len(), f.over.size) {
			return e.barrier(group)
		}
	}
	var txns []*chainedTxn
	var keys, bytes int64
	for i := 0; i < len(group); {
		own, n, size := group[i].over, group[i].over.len(), group[i].over.size
		j := i + 1
		for ; j < len(group) && e.fits(n+group[j].over.len(), size+group[j].over.size); j++ {
			if own == group[i].over {
				own = newOverlay()
				own.absorb(group[i].over)
			}
			own.absorb(group[j].over)
			n, size = n+group[j].over.len(), size+group[j].over.size
		}
		for _, g := range group[i:j] {
			keys += int64(g.over.len())
			for k, v := range g.over.vals {
				bytes += int64(len(k) + len(v.val))
			}
		}
		t, err := e.chained(own, group[i:j])
		if err != nil {
			return failed(err)
		}
		txns = append(txns, t)
		i = j
	}
	return func() error {
		for _, t := range txns {
			if err := t.wait(); err != nil {
				return err
			}
		}
		st := &e.s.stats
		st.Syncs.Add(1)
		st.SyncNanos.Add(time.Since(start).Nanoseconds())
		st.Keys.Add(keys)
		st.Bytes.Add(bytes)
		return nil
	}
}

// chained begins one transaction of own writes, carrying the writes of the
// open ones before it; when they would not fit one transaction together,
// it first waits for the oldest open ones to commit.
func (e *etcdEngine) chained(own *overlay, segs []*inflight) (*chainedTxn, error) {
	var prev *chainedTxn
	if n := len(e.pipe.open); n > 0 {
		prev = e.pipe.open[n-1]
	}
	t := &chainedTxn{segs: segs, sent: make(chan struct{}), done: make(chan struct{})}
	if own.len() == 0 {
		// Nothing to write (hooks or answers only): done once the one
		// before it is.
		close(t.sent)
		go e.follow(t, prev)
		return t, nil
	}
	e.pipe.prune()
	var carried *overlay
	for {
		carried = newOverlay()
		for _, o := range e.pipe.open {
			if o.over != nil {
				carried.absorb(o.over)
			}
		}
		carried.absorb(own)
		if len(e.pipe.open) == 0 || e.fits(carried.len(), carried.size) {
			break
		}
		if err := e.pipe.open[0].wait(); err != nil {
			return nil, errPredecessor
		}
		e.pipe.prune()
	}
	ops, err := e.ops(carried)
	if err != nil {
		return nil, err
	}
	e.pipe.seq++
	t.seq, t.over, t.ops = e.pipe.seq, own, ops
	e.pipe.open = append(e.pipe.open, t)
	go e.run(t, prev)
	return t, nil
}

// barrier commits a group through the commit log, alone: once everything
// in flight has committed, and before anything after it is begun.
func (e *etcdEngine) barrier(group []*inflight) func() error {
	for _, t := range e.pipe.open {
		if err := t.wait(); err != nil {
			return failed(errPredecessor)
		}
	}
	clear(e.pipe.open)
	e.pipe.open = e.pipe.open[:0]
	return failed(e.durable(group))
}

func failed(err error) func() error { return func() error { return err } }

// follow finishes a transaction with nothing to write once the one before
// it has committed.
func (e *etcdEngine) follow(t *chainedTxn, prev *chainedTxn) {
	if prev != nil {
		if err := prev.wait(); err != nil {
			t.err = errPredecessor
		}
	}
	if t.err == nil {
		for _, f := range t.segs {
			f.done.Store(true)
		}
	}
	close(t.done)
}

// run commits one chained transaction (prev is the one begun before it, nil
// for none).
func (e *etcdEngine) run(t *chainedTxn, prev *chainedTxn) {
	t.err = e.commitChained(t, prev)
	if t.err == nil {
		for _, f := range t.segs {
			f.done.Store(true)
		}
		e.s.stats.Batches.Add(1)
	}
	close(t.done)
}

func (e *etcdEngine) commitChained(t *chainedTxn, prev *chainedTxn) error {
	// Sent after the one before it, so that it seldom overtakes it on the
	// way.
	if prev != nil {
		select {
		case <-prev.sent:
		case <-prev.done:
		}
	}
	close(t.sent)
	if e.chainHook != nil {
		e.chainHook("send", t)
	}
	value := chainValue(t.seq)
	txn := clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.Value(e.chain), "<", value)},
		append(t.ops[:len(t.ops):len(t.ops)], clientv3.OpPut(e.chain, value)),
		[]clientv3.Op{clientv3.OpGet(e.chain)})
	resp, err := e.commit([]clientv3.Op{txn})
	if e.chainHook != nil {
		e.chainHook("answered", t)
	}
	if err != nil {
		return err
	}
	inner := resp.Responses[0].GetResponseTxn()
	if inner.Succeeded {
		return nil
	}
	r := inner.Responses[0].GetResponseRange()
	if r == nil || len(r.Kvs) == 0 {
		return fmt.Errorf("the commit chain at %s is gone", e.chain)
	}
	// A later transaction, which carried this one's writes, committed
	// first (or an earlier attempt of this one whose answer was lost).
	e.s.stats.Overtaken.Add(1)
	return nil
}
