package kv

// The write-ahead log: Tether's own, so an acknowledged write costs one
// write(2) and one fdatasync(2) of a file that is already allocated, and
// durability never depends on how Badger lays out its files.
//
// The log is a series of segment files in DIR/wal, each named by the seq of
// its first record and fully written before use (so a later fdatasync has no
// block allocation to journal). A new segment is made from a segment the log
// no longer needs (recycled: renamed, not rewritten), or else from a file of
// zeros, whose filling runs in the background, off the commit path and,
// after the first run, off start-up. A record is
//
//	length u32 | crc32c(payload) u32 | payload
//	payload: seq u64, then entries: op u8 (1 set, 2 delete), key, value
//	(each a uvarint length and bytes) and expiresAt uvarint
//
// Records are appended in commit order with consecutive seqs, the first of a
// segment being the seq in its name. A record whose length is zero, whose
// checksum fails, that runs past the end or whose seq is not the next one is
// the end of the log: only the last write before a crash can be torn, and it
// was never acknowledged. A segment is dropped once every record in it is in
// a table Badger has flushed (flushed.go: Badger's commits are not synced);
// at open, every record left is applied again, in order, which leaves the
// same state whatever was applied before.
//
// A recycled segment still holds its old records past what the new one
// writes. None of them can pass for the next record: the recycled file is
// named after the last seq it ever held (recycledName), and the log never
// issues a seq at or below it again, even after a clean close left no
// segment to continue from (openWAL starts past it), so every old record's
// seq is below the new segment's first.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	walSegmentSize = 64 << 20
	walHeader      = 8
	opSet          = 1
	opDelete       = 2
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// wal appends records to the current segment. Only the logger goroutine
// uses it.
type wal struct {
	dir  string
	f    *os.File
	base uint64 // seq of the segment's first record
	off  int64
	next uint64 // seq of the next record
	buf  []byte

	segments []uint64 // the first seq of every segment on disk, oldest first

	// spare, when set, reports the end of the background preparation of the
	// next segment's file (spareName): zero-filling 64 MiB is kept off the
	// commit path.
	spare chan error
	// recycled is the path of a dropped segment kept to be the next one
	// ("" for none); the zero-filled spare is used only without it.
	recycled string
	// opened is the first seq of the first segment this log made: a segment
	// before it was left by an earlier run, and what it holds past the
	// records the open read back is unknown (a crash can keep a later
	// record of a write whose first page it lost), so it is deleted when
	// dropped, never recycled.
	opened uint64
}

// spareName is the zero-filled file the next segment is made from. It is
// never read as a segment (listSegments takes only *.log files), and holds
// only zeros, so one left by a crash is as good as a fresh one.
func spareName(dir string) string { return filepath.Join(dir, "spare.tmp") }

// zeroFill makes path a file of walSegmentSize zero bytes on stable storage.
func zeroFill(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	zeros := make([]byte, 1<<20)
	for written := 0; written < walSegmentSize; written += len(zeros) {
		if _, err := f.Write(zeros); err != nil {
			f.Close()
			return err
		}
	}
	return errors.Join(f.Sync(), f.Close())
}

// recycledName is a segment dropped from the log and kept to be made the next
// one, named after the last seq it ever held. It is never read as a segment
// (listSegments takes only *.log files).
func recycledName(dir string, last uint64) string {
	return filepath.Join(dir, fmt.Sprintf("recycled-%016d.tmp", last))
}

// findRecycled returns the recycled segment in dir with the highest last seq
// (and that seq; "" and 0 for none), removing any other and any of the wrong
// size (one is kept at a time, so a crash leaves at most two).
func findRecycled(dir string) (string, uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, err
	}
	var best string
	var top uint64
	var drop []string
	for _, e := range entries {
		n, ok := seqInName(e.Name(), "recycled-", ".tmp")
		if !ok {
			continue
		}
		path := filepath.Join(dir, e.Name())
		switch info, err := e.Info(); {
		case err != nil || info.Size() != walSegmentSize:
			drop = append(drop, path)
		case best == "" || n > top:
			if best != "" {
				drop = append(drop, best)
			}
			best, top = path, n
		default:
			drop = append(drop, path)
		}
	}
	for _, path := range drop {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return "", 0, err
		}
	}
	return best, top, nil
}

// seqInName is the seq a log file's name carries between prefix and suffix.
func seqInName(name, prefix, suffix string) (uint64, bool) {
	name, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if name, ok = strings.CutSuffix(name, suffix); !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(name, 10, 64)
	return n, err == nil
}

func segmentName(dir string, first uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%016d.log", first))
}

// listSegments returns the first seqs of the segments in dir, oldest first.
func listSegments(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range entries {
		if n, ok := seqInName(e.Name(), "", ".log"); ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// walRecord is one record read back.
type walRecord struct {
	seq     uint64
	entries []walEntry
}

type walEntry struct {
	key       []byte
	val       []byte
	deleted   bool
	expiresAt uint64
}

// readWAL returns every intact record in dir, in order, and the seq that
// follows the last one (1 for an empty log).
func readWAL(dir string) ([]walRecord, uint64, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, 0, err
	}
	next := uint64(1)
	if len(segs) > 0 {
		next = segs[0]
	}
	var out []walRecord
	for i, first := range segs {
		if first != next {
			break // a gap: nothing after it was acknowledged in order
		}
		recs, end, err := readSegment(segmentName(dir, first), first)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, recs...)
		next = end
		if i+1 < len(segs) && segs[i+1] != end {
			break // this segment ends early: the log ends here
		}
	}
	return out, next, nil
}

func readSegment(path string, first uint64) ([]walRecord, uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var out []walRecord
	want := first
	var hdr [walHeader]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			break
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		if n == 0 || n > walSegmentSize {
			break
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			break
		}
		if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(hdr[4:]) {
			break
		}
		rec, err := decodeRecord(payload)
		if err != nil || rec.seq != want {
			break
		}
		out = append(out, rec)
		want++
	}
	return out, want, nil
}

func decodeRecord(p []byte) (walRecord, error) {
	if len(p) < 8 {
		return walRecord{}, errors.New("short record")
	}
	rec := walRecord{seq: binary.LittleEndian.Uint64(p)}
	p = p[8:]
	bytesOf := func() ([]byte, bool) {
		n, k := binary.Uvarint(p)
		if k <= 0 || uint64(len(p)-k) < n {
			return nil, false
		}
		b := p[k : k+int(n)]
		p = p[k+int(n):]
		return b, true
	}
	for len(p) > 0 {
		op := p[0]
		p = p[1:]
		key, ok := bytesOf()
		if !ok {
			return walRecord{}, errors.New("bad key")
		}
		val, ok := bytesOf()
		if !ok {
			return walRecord{}, errors.New("bad value")
		}
		exp, k := binary.Uvarint(p)
		if k <= 0 || (op != opSet && op != opDelete) {
			return walRecord{}, errors.New("bad entry")
		}
		p = p[k:]
		rec.entries = append(rec.entries, walEntry{key: key, val: val, deleted: op == opDelete, expiresAt: exp})
	}
	return rec, nil
}

// openWAL starts a new segment at seq next in dir (made if missing).
func openWAL(dir string, next uint64) (*wal, error) {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		// The log's directory must outlive a crash before anything in it
		// is acknowledged: its name lives in the parent.
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return nil, err
		}
	}
	w := &wal{dir: dir, next: next}
	recycled, last, err := findRecycled(dir)
	if err != nil {
		return nil, err
	}
	// Every seq from now on lies above every record the recycled file holds.
	w.recycled, w.next = recycled, max(next, last+1)
	w.opened = w.next
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	// A segment at or past the log's end holds nothing the open read back:
	// the one named next is replaced by the new segment (a crash after a
	// segment was made and before its first record leaves it empty), and
	// one past it cannot follow in order. Either would otherwise sit in
	// segments beside the new one, and dropping it would delete or recycle
	// the file the log appends to.
	for _, first := range segs {
		switch {
		case first < w.next:
			w.segments = append(w.segments, first)
		case first == w.next: // renamed over by startSegment
		default:
			if err := os.Remove(segmentName(dir, first)); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
		}
	}
	if err := w.startSegment(); err != nil {
		return nil, err
	}
	return w, nil
}

// startSegment makes the segment for the next record from the recycled
// segment or else the spare file (zero-filling one now only when there is
// neither), makes its name durable before any record in it is acknowledged,
// and, when it took the spare, starts preparing the next in the background.
func (w *wal) startSegment() error {
	path := segmentName(w.dir, w.next)
	if w.recycled != "" {
		from := w.recycled
		w.recycled = ""
		if err := w.useFile(from, path); !os.IsNotExist(err) {
			return err
		}
		// Gone (removed by hand, say): made from the spare instead.
	}
	spare := spareName(w.dir)
	ready := false
	if w.spare != nil {
		ready = <-w.spare == nil // prepared a whole segment ago: long done
		w.spare = nil
	} else if info, err := os.Stat(spare); err == nil && info.Size() == walSegmentSize {
		ready = true // left by the last run
	}
	if !ready {
		if err := zeroFill(spare); err != nil {
			return err
		}
	}
	if err := w.useFile(spare, path); err != nil {
		return err
	}
	done := make(chan error, 1)
	w.spare = done
	go func() { done <- zeroFill(spare) }()
	return nil
}

// useFile renames the prepared file from to the segment path, makes the name
// durable and appends to it from now on.
func (w *wal) useFile(from, path string) error {
	if err := os.Rename(from, path); err != nil {
		return err
	}
	if err := syncDir(w.dir); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if w.f != nil {
		w.f.Close()
	}
	w.f, w.base, w.off = f, w.next, 0
	w.segments = append(w.segments, w.next)
	return nil
}

// add encodes one record of the overlay into the pending buffer and returns
// its seq.
func (w *wal) add(o *overlay) uint64 {
	w.buf = appendRecord(w.buf, w.next, o)
	seq := w.next
	w.next++
	return seq
}

// appendRecord appends the record of the overlay's writes, with seq, to buf
// (the log's format; etcd's commit log uses it too).
func appendRecord(buf []byte, seq uint64, o *overlay) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, walHeader)...)
	buf = binary.LittleEndian.AppendUint64(buf, seq)
	for k, v := range o.vals {
		op := byte(opSet)
		if v.deleted {
			op = opDelete
		}
		buf = append(buf, op)
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
		buf = binary.AppendUvarint(buf, uint64(len(v.val)))
		buf = append(buf, v.val...)
		buf = binary.AppendUvarint(buf, v.expiresAt)
	}
	payload := buf[start+walHeader:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, crcTable))
	return buf
}

// parseRecord reads back one whole record appendRecord wrote.
func parseRecord(b []byte) (walRecord, error) {
	if len(b) < walHeader {
		return walRecord{}, errors.New("short record")
	}
	n := binary.LittleEndian.Uint32(b[:4])
	if int(n) != len(b)-walHeader {
		return walRecord{}, fmt.Errorf("a record of %d bytes says it holds %d", len(b)-walHeader, n)
	}
	payload := b[walHeader:]
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(b[4:]) {
		return walRecord{}, errors.New("a record's checksum does not match")
	}
	return decodeRecord(payload)
}

// flush writes the pending records and fdatasyncs them. A batch that does
// not fit the segment's room starts a new segment (records never span two).
func (w *wal) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if w.off+int64(len(w.buf)) > walSegmentSize-walHeader {
		if len(w.buf) > walSegmentSize-walHeader {
			return fmt.Errorf("a commit of %d bytes is larger than a log segment", len(w.buf))
		}
		// The records in buf carry seqs from w.next-k; the new segment is
		// named after the first of them.
		first := binary.LittleEndian.Uint64(w.buf[walHeader:])
		next := w.next
		w.next = first
		err := w.startSegment()
		w.next = next
		if err != nil {
			return err
		}
	}
	if _, err := w.f.WriteAt(w.buf, w.off); err != nil {
		return err
	}
	if err := fdatasync(w.f); err != nil {
		return err
	}
	w.off += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// removeApplied drops the segments whose records all have seq <= applied
// (never the current one: a later segment exists for each one dropped). The
// first one this log made that is dropped while none is kept is kept as the
// recycled segment, named after its last seq (the next segment's first, less
// one); the others are deleted.
func (w *wal) removeApplied(applied uint64) error {
	removed := false
	for len(w.segments) > 1 && w.segments[1] <= applied+1 {
		old := segmentName(w.dir, w.segments[0])
		if w.recycled == "" && w.segments[0] >= w.opened {
			to := recycledName(w.dir, w.segments[1]-1)
			if err := os.Rename(old, to); err != nil {
				return err
			}
			w.recycled = to
		} else if err := os.Remove(old); err != nil && !os.IsNotExist(err) {
			return err
		}
		w.segments = w.segments[1:]
		removed = true
	}
	if removed {
		return syncDir(w.dir)
	}
	return nil
}

// removeAll deletes every segment (after close, when Badger holds all).
func (w *wal) removeAll() error {
	for _, first := range w.segments {
		if err := os.Remove(segmentName(w.dir, first)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	w.segments = nil
	return syncDir(w.dir)
}

func (w *wal) close() error {
	if w.spare != nil {
		<-w.spare // the next run starts from it
		w.spare = nil
	}
	if w.f == nil {
		return nil
	}
	return w.f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
