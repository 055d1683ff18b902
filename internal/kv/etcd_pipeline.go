package kv

// Pipelined commits on etcd: a shard's store keeps up to Pipeline groups'
// transactions in flight at once, instead of waiting for each commit before
// it sends the next, so the writes that queue behind a commit no longer
// wait for it (etcd batches what arrives together into one raft round).
//
// etcd does not keep the order in which one client sends transactions: each
// is its own gRPC call, the client spreads them over the members, and a
// follower forwards its own to the leader. So every pipelined transaction
// is chained to the one before it by the version of one key, Prefix +
// "chain", which only they write:
//
//	If(guard) Then( Txn( If(Version(chain) = v)
//	                     Then(the writes..., Put(chain))
//	                     Else(Get(chain)) ) )
//
// The transaction begun n-th after the store opened at version v0 expects
// v0+n-1 and leaves v0+n. Hence:
//   - commits happen in the order the writer made the segments: a
//     transaction commits only on top of every one before it;
//   - a transaction that fails (guard false, timeout, no quorum) takes
//     every later one down with it: they can never commit on top of its
//     missing writes, and the store breaks at the first failure, so none of
//     them is acknowledged either (Store.pipeLoop answers groups in order,
//     each only once it and every earlier one committed);
//   - the guard is in every transaction, evaluated by etcd at commit, so a
//     deposed owner's transaction fails whatever else is in flight;
//   - a transaction that reaches etcd before its predecessor finds the
//     chain short (Else reads it): it waits for its predecessor and is sent
//     again, once; one that finds the chain past its own version committed
//     on an earlier attempt whose answer was lost.
//
// A group with a segment too large for one transaction (the commit log,
// etcd_log.go) is a barrier: it waits for everything in flight, commits
// alone, and nothing after it starts before it is done; it does not move
// the chain, so the next chained transaction expects what the last one left.

import (
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// defaultPipeline is EtcdOptions.Pipeline's default.
const defaultPipeline = 8

// errPredecessor is a chained transaction given up because one before it
// failed.
var errPredecessor = errors.New("an earlier transaction of the store failed")

// pipeState is the engine's side of the pipeline; only the logger touches
// it.
type pipeState struct {
	depth int
	ver   int64         // the chain's version once every begun transaction commits
	last  *chainedTxn   // the last transaction begun, nil before the first
	open  []*chainedTxn // begun and maybe not done, oldest first
}

// chainedTxn is one pipelined transaction.
type chainedTxn struct {
	ops  []clientv3.Op
	ver  int64       // the chain's version it expects; it leaves ver+1
	segs []*inflight // marked done once it committed
	done chan struct{}
	err  error // set before done is closed
}

// add records t as the last transaction begun.
func (p *pipeState) add(t *chainedTxn) {
	n := 0
	for n < len(p.open) && p.open[n].finished() {
		n++
	}
	clear(p.open[:n])
	p.open = append(p.open[n:], t)
	p.last = t
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

// readChain reads the chain's version at open: the first transaction
// expects it.
func (e *etcdEngine) readChain() error {
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.cli.Get(ctx, e.chain, clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("error reading the commit chain at %s: %w", e.chain, err)
	}
	if len(resp.Kvs) > 0 {
		e.pipe.ver = resp.Kvs[0].Version
	}
	return nil
}

func (e *etcdEngine) pipelineDepth() int { return e.pipe.depth }

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
		merged, n, size := group[i].over, group[i].over.len(), group[i].over.size
		j := i + 1
		for ; j < len(group) && e.fits(n+group[j].over.len(), size+group[j].over.size); j++ {
			if merged == group[i].over {
				merged = newOverlay()
				merged.absorb(group[i].over)
			}
			merged.absorb(group[j].over)
			n, size = n+group[j].over.len(), size+group[j].over.size
		}
		for _, g := range group[i:j] {
			keys += int64(g.over.len())
			for k, v := range g.over.vals {
				bytes += int64(len(k) + len(v.val))
			}
		}
		if merged.len() == 0 {
			// Nothing to write (hooks or answers only): done once every
			// transaction before it is.
			t := &chainedTxn{segs: group[i:j], done: make(chan struct{})}
			go e.follow(t, e.pipe.last)
			txns = append(txns, t)
			e.pipe.add(t)
			i = j
			continue
		}
		ops, err := e.ops(merged)
		if err != nil {
			return failed(err)
		}
		t := &chainedTxn{ops: ops, ver: e.pipe.ver, segs: group[i:j], done: make(chan struct{})}
		e.pipe.ver++
		go e.run(t, e.pipe.last)
		txns = append(txns, t)
		e.pipe.add(t)
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

// follow finishes a transaction with nothing to write once its predecessor
// has committed.
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
// for the first).
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
	for {
		if e.chainHook != nil {
			e.chainHook("send", t)
		}
		txn := clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Version(e.chain), "=", t.ver)},
			append(t.ops[:len(t.ops):len(t.ops)], clientv3.OpPut(e.chain, "")),
			[]clientv3.Op{clientv3.OpGet(e.chain, clientv3.WithKeysOnly())})
		resp, err := e.commit([]clientv3.Op{txn})
		if err != nil {
			return err
		}
		inner := resp.Responses[0].GetResponseTxn()
		if inner.Succeeded {
			return nil
		}
		var at int64
		if r := inner.Responses[0].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
			at = r.Kvs[0].Version
		}
		if at > t.ver {
			// An earlier attempt committed; its answer was lost.
			return nil
		}
		if prev == nil {
			return fmt.Errorf("the commit chain at %s is at version %d, not %d: written by someone else", e.chain, at, t.ver)
		}
		if e.chainHook != nil {
			e.chainHook("short", t)
		}
		// It overtook its predecessor: once that one committed, again.
		if err := prev.wait(); err != nil {
			return errPredecessor
		}
		prev = nil
		e.s.stats.Reordered.Add(1)
	}
}
