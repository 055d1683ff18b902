package kv

// The commit log in etcd, for a segment too large for one transaction
// (more than MaxTxnOps writes or MaxRequestBytes): all or nothing, as a
// transaction would be.
//
//	1. its record (the write-ahead log's format, wal.go) is written as
//	   chunks <prefix>log/<seq>/<i>, guarded transactions;
//	2. the marker <prefix>log/<seq> (the chunks' count) is written: the
//	   segment is durable;
//	3. its writes are applied in guarded transactions of at most
//	   MaxTxnOps writes and MaxRequestBytes;
//	4. the marker and chunks are deleted.
//
// Opening a store replays the log: every record with a marker is applied
// again (3, 4), in order; chunks without a marker were never acknowledged
// and are deleted. Until a logged segment is applied, the writer and View
// shadow it with its overlay; only a store that broke half way (its
// readers until it is reopened) can see part of one.

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func (e *etcdEngine) markerKey(seq uint64) string { return fmt.Sprintf("%s%020d", e.logp, seq) }

func (e *etcdEngine) chunkKey(seq uint64, i int) string {
	return fmt.Sprintf("%s/%06d", e.markerKey(seq), i)
}

// logged commits one segment through the log.
func (e *etcdEngine) logged(o *overlay) error {
	seq := e.seq
	e.seq++
	rec := appendRecord(nil, seq, o)
	if len(rec) > maxLogRecord {
		return fmt.Errorf("a commit of %d bytes is larger than the log takes", len(rec))
	}
	chunk := e.maxBytes - 1024
	n := 0
	for off := 0; off < len(rec); off += chunk {
		end := min(off+chunk, len(rec))
		if err := e.commitOps([]clientv3.Op{clientv3.OpPut(e.chunkKey(seq, n), string(rec[off:end]))}); err != nil {
			return err
		}
		n++
	}
	if err := e.step("chunks"); err != nil {
		return err
	}
	if err := e.commitOps([]clientv3.Op{clientv3.OpPut(e.markerKey(seq), strconv.Itoa(n))}); err != nil {
		return err
	}
	if err := e.step("marked"); err != nil {
		return err
	}
	return e.applyLogged(seq, o)
}

func (e *etcdEngine) step(name string) error {
	if e.hook == nil {
		return nil
	}
	return e.hook(name)
}

// applyLogged applies a logged segment's writes in transactions that fit
// etcd's limits, then deletes its log record.
func (e *etcdEngine) applyLogged(seq uint64, o *overlay) error {
	keys := make([]string, 0, o.len())
	for k := range o.vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var ops []clientv3.Op
	var size int64
	for _, k := range keys {
		v := o.vals[k]
		sz := int64(len(k)+len(v.val)) + 24
		if len(ops) > 0 && !e.fits(len(ops)+1, size+sz) {
			if err := e.commitOps(ops); err != nil {
				return err
			}
			e.s.stats.Batches.Add(1)
			ops, size = nil, 0
		}
		op, err := e.op(k, v)
		if err != nil {
			return err
		}
		ops, size = append(ops, op), size+sz
	}
	if len(ops) > 0 {
		if err := e.commitOps(ops); err != nil {
			return err
		}
		e.s.stats.Batches.Add(1)
	}
	return e.commitOps([]clientv3.Op{clientv3.OpDelete(e.markerKey(seq), clientv3.WithPrefix())})
}

// replay applies every marked record of the log, in order, and deletes the
// chunks of unmarked ones.
func (e *etcdEngine) replay() error {
	type record struct {
		marked bool
		chunks int
	}
	recs := map[uint64]*record{}
	var last uint64
	start := e.logp
	end := clientv3.GetPrefixRangeEnd(e.logp)
	for {
		ctx, cancel := e.ctx()
		resp, err := e.cli.Get(ctx, start, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(1000))
		cancel()
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			name := strings.TrimPrefix(string(kv.Key), e.logp)
			seqText, chunk, isChunk := strings.Cut(name, "/")
			seq, err := strconv.ParseUint(seqText, 10, 64)
			if err != nil {
				return fmt.Errorf("a key in the commit log is not the store's: %q", kv.Key)
			}
			r := recs[seq]
			if r == nil {
				r = &record{}
				recs[seq] = r
			}
			if isChunk && chunk != "" {
				r.chunks++
			} else {
				r.marked = true
			}
			last = max(last, seq)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	e.seq = last + 1
	seqs := make([]uint64, 0, len(recs))
	for seq := range recs {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		if !recs[seq].marked {
			e.log.Warn("deleting an unfinished commit from the log", "seq", seq)
			if err := e.commitOps([]clientv3.Op{clientv3.OpDelete(e.markerKey(seq), clientv3.WithPrefix())}); err != nil {
				return err
			}
			continue
		}
		o, err := e.readLogged(seq)
		if err != nil {
			return err
		}
		e.log.Info("replaying a commit from the log", "seq", seq, "keys", o.len())
		if err := e.applyLogged(seq, o); err != nil {
			return err
		}
	}
	return nil
}

// readLogged reads a marked record back.
func (e *etcdEngine) readLogged(seq uint64) (*overlay, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	marker, err := e.cli.Get(ctx, e.markerKey(seq))
	if err != nil {
		return nil, err
	}
	if len(marker.Kvs) != 1 {
		return nil, fmt.Errorf("the log's record %d has no marker", seq)
	}
	n, err := strconv.Atoi(string(marker.Kvs[0].Value))
	if err != nil {
		return nil, fmt.Errorf("the log's record %d has a bad marker %q", seq, marker.Kvs[0].Value)
	}
	var rec bytes.Buffer
	for i := range n {
		ctx, cancel := e.ctx()
		resp, err := e.cli.Get(ctx, e.chunkKey(seq, i))
		cancel()
		if err != nil {
			return nil, err
		}
		if len(resp.Kvs) != 1 {
			return nil, fmt.Errorf("the log's record %d lacks chunk %d of %d", seq, i, n)
		}
		rec.Write(resp.Kvs[0].Value)
	}
	r, err := parseRecord(rec.Bytes())
	if err != nil {
		return nil, fmt.Errorf("the log's record %d: %w", seq, err)
	}
	o := newOverlay()
	for _, en := range r.entries {
		o.put(string(en.key), value{val: en.val, deleted: en.deleted, expiresAt: en.expiresAt})
	}
	return o, nil
}
