package indexes

import (
	"fmt"
	"sync/atomic"

	"github.com/tinylib/msgp/msgp"

	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// scanNodes calls fn for every stored node record, in key order, with the
// node decoded and the record's bytes (fn may keep val; n is reused for the
// next record, so fn copies what it keeps of it).
//
// Reading the store and decoding are the two halves of a start-up's node
// scan, each about as long as the other at a million nodes. They overlap:
// this goroutine reads and hands records over in batches, another decodes
// them and calls fn, so fn runs on one goroutine, in order.
func scanNodes(ktx *kv.Txn, fn func(ref NodeRef, n *records.Node, val []byte)) error {
	batches := make(chan *recordBatch, 4)
	failed := make(chan error, 1)
	var stop atomic.Bool
	go func() {
		var n records.Node // decoded into again and again: msgp reuses its maps and slices
		var err error
		for b := range batches {
			for i := 0; err == nil && i < len(b.vals); i++ {
				// A record written before a field was appended leaves that
				// field as it was (records.go), so only fields every
				// stored record has may carry over from the last one.
				n = records.Node{Labels: n.Labels, Props: n.Props, Usage: n.Usage, UsageTotal: n.UsageTotal}
				if err = decode(b.vals[i], &n, b.key(i)); err != nil {
					stop.Store(true)
					break
				}
				fn(NodeRef{Intern(n.Tenant), n.ID}, &n, b.vals[i])
			}
		}
		failed <- err
	}()
	b := newRecordBatch()
	err := ktx.Scan([]byte{records.TagNode, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		b.add(key, val)
		if len(b.vals) == RecordBatchLen {
			batches <- b
			b = newRecordBatch()
		}
		return !stop.Load(), nil
	})
	batches <- b
	close(batches)
	if derr := <-failed; derr != nil {
		return derr
	}
	return err
}

// RecordBatchLen is how many records the scan hands over at a time.
const RecordBatchLen = 512

// recordBatch is records read and not yet decoded: the values as the store
// gave them (copies the decoder may keep), the keys copied into one buffer
// (the store reuses its key's bytes), kept only to name a record that does
// not decode.
type recordBatch struct {
	keys []byte
	ends []int
	vals [][]byte
}

func newRecordBatch() *recordBatch {
	return &recordBatch{ends: make([]int, 0, RecordBatchLen), vals: make([][]byte, 0, RecordBatchLen)}
}

func (b *recordBatch) add(key, val []byte) {
	b.keys = append(b.keys, key...)
	b.ends = append(b.ends, len(b.keys))
	b.vals = append(b.vals, val)
}

func (b *recordBatch) key(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.keys[start:b.ends[i]]
}

// decode unmarshals a record, naming its key when it does not decode.
func decode(b []byte, v msgp.Unmarshaler, what []byte) error {
	if _, err := v.UnmarshalMsg(b); err != nil {
		return fmt.Errorf("error decoding %q: %w", what, err)
	}
	return nil
}
