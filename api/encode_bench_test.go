package api

import "testing"

// BenchmarkAppendNode is the node appender alone, without the request
// around it: the part of every node answer a change to the node's shape
// can make slower.
func BenchmarkAppendNode(b *testing.B) {
	ns := toNodes(testNodes())
	buf := make([]byte, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		for i := range ns {
			var err error
			if buf, err = ns[i].appendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
