package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/kv"
)

const (
	magic         = "TETHERBK"
	version  byte = 1
	kindKV   byte = 1
	kindBlob byte = 2
	kindEnd  byte = 0xFF
	maxField      = 64 << 20 // the largest key or value a stream may carry
)

// Files are the blob files a backup carries beside the records.
type Files interface {
	// Hold keeps every blob file in place until release (a collection
	// meanwhile leaves the file), so every file the snapshot names is found.
	Hold() (release func())
	// OpenFile opens a blob's file.
	OpenFile(tenant, sha string) (*os.File, error)
}

// Stats says what a backup or a restore carried.
type Stats struct {
	Records int64 `json:"records"` // records and blob files
	Blobs   int64 `json:"blobs"`   // blob files among them
	Bytes   int64 `json:"bytes"`
}

// Write writes a backup of s to w: one consistent snapshot of every record,
// then the file of every blob a record in it names (files may be nil: no
// blobs).
func Write(w io.Writer, s *kv.Store, files Files) (Stats, error) {
	var blobs []graphstore.BlobID
	if files != nil {
		release := files.Hold()
		defer release()
	}
	h := sha256.New()
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(io.MultiWriter(cw, h), 256<<10)
	var st Stats
	bw.WriteString(magic)
	bw.WriteByte(version)
	var num [binary.MaxVarintLen64]byte
	uvarint := func(v uint64) { bw.Write(num[:binary.PutUvarint(num[:], v)]) }
	err := s.Snapshot(func(key, val []byte, expiresAt uint64) error {
		if id, ok := graphstore.BlobIDOfKey(key); ok && files != nil {
			blobs = append(blobs, id)
		}
		bw.WriteByte(kindKV)
		uvarint(uint64(len(key)))
		bw.Write(key)
		uvarint(uint64(len(val)))
		bw.Write(val)
		uvarint(expiresAt)
		st.Records++
		if bw.Buffered() > 128<<10 {
			return bw.Flush() // the first write error ends the snapshot
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	// Blob files are immutable once named by a record, and held in place:
	// read after the snapshot, they are what it named.
	for _, id := range blobs {
		if err := writeBlob(bw, uvarint, files, id); err != nil {
			return st, err
		}
		st.Records++
		st.Blobs++
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	// The trailer: its kind byte and count are not covered by the checksum.
	tail := []byte{kindEnd}
	tail = binary.AppendUvarint(tail, uint64(st.Records))
	tail = h.Sum(tail)
	if _, err := cw.Write(tail); err != nil {
		return st, err
	}
	st.Bytes = cw.n
	return st, nil
}

// writeBlob writes one blob file: its tenant, sha256, size and bytes.
func writeBlob(bw *bufio.Writer, uvarint func(uint64), files Files, id graphstore.BlobID) error {
	f, err := files.OpenFile(id.Tenant, id.SHA)
	if err != nil {
		return fmt.Errorf("error reading blob %s of %s: %w", id.SHA, id.Tenant, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	bw.WriteByte(kindBlob)
	uvarint(uint64(len(id.Tenant)))
	bw.WriteString(id.Tenant)
	uvarint(uint64(len(id.SHA)))
	bw.WriteString(id.SHA)
	uvarint(uint64(info.Size()))
	n, err := io.Copy(bw, f)
	if err == nil && n != info.Size() {
		err = fmt.Errorf("blob %s of %s changed size while read", id.SHA, id.Tenant)
	}
	return err
}

// Restore reads a backup from r into dir, which must not exist or be empty.
// Nothing is left at dir unless the whole stream was read and checked.
func Restore(r io.Reader, dir string) (Stats, error) {
	var st Stats
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return st, fmt.Errorf("%s is not empty: restore into a new directory", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return st, err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return st, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".restoring-")
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	rd := &reader{r: bufio.NewReaderSize(r, 256<<10), h: sha256.New(), blobDir: blob.DirIn(tmp)}
	err = kv.Load(tmp, func(put func(key, val []byte, expiresAt uint64) error) error {
		n, err := rd.records(put)
		st.Records, st.Blobs = n, rd.blobs
		return err
	})
	if err != nil {
		return st, err
	}
	st.Bytes = rd.n
	if err := syncTree(blob.DirIn(tmp)); err != nil {
		return st, err
	}
	// An empty directory left at dir (the caller's mount point, say) is
	// replaced by the restored one.
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return st, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return st, err
	}
	return st, syncDir(parent)
}

// Verify reads a whole backup from r and checks it (header, records,
// count and checksum) without restoring it.
func Verify(r io.Reader) (Stats, error) {
	rd := &reader{r: bufio.NewReaderSize(r, 256<<10), h: sha256.New()}
	n, err := rd.records(func([]byte, []byte, uint64) error { return nil })
	return Stats{Records: n, Blobs: rd.blobs, Bytes: rd.n}, err
}

// reader decodes a stream, hashing what it reads. Blob files go under
// blobDir ("" when only checking).
type reader struct {
	r       *bufio.Reader
	h       hash.Hash
	n       int64
	blobDir string
	blobs   int64
}

func (rd *reader) byte() (byte, error) {
	b, err := rd.r.ReadByte()
	if err == nil {
		rd.h.Write([]byte{b})
		rd.n++
	}
	return b, err
}

func (rd *reader) full(n uint64) ([]byte, error) {
	if n > maxField {
		return nil, fmt.Errorf("a field of %d bytes is larger than a backup holds", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rd.r, b); err != nil {
		return nil, err
	}
	rd.h.Write(b)
	rd.n += int64(n)
	return b, nil
}

func (rd *reader) uvarint() (uint64, error) {
	return binary.ReadUvarint(byteReader{rd})
}

type byteReader struct{ rd *reader }

func (b byteReader) ReadByte() (byte, error) { return b.rd.byte() }

// records reads the header and every record into put, then checks the
// trailer.
func (rd *reader) records(put func(key, val []byte, expiresAt uint64) error) (int64, error) {
	head, err := rd.full(uint64(len(magic)) + 1)
	if err != nil {
		return 0, fmt.Errorf("not a Tether backup: %w", unexpected(err))
	}
	if string(head[:len(magic)]) != magic {
		return 0, errors.New("not a Tether backup (no TETHERBK header)")
	}
	if head[len(magic)] != version {
		return 0, fmt.Errorf("backup format %d is not supported (this build reads format %d)", head[len(magic)], version)
	}
	var n int64
	for {
		kind, err := rd.r.ReadByte() // hashed below, unless it is the trailer's
		if err != nil {
			return n, fmt.Errorf("the backup is truncated after %d records: %w", n, unexpected(err))
		}
		switch kind {
		case kindEnd:
			sum := rd.h.Sum(nil) // of everything before this kind byte
			count, err := binary.ReadUvarint(rd.r)
			if err != nil {
				return n, fmt.Errorf("the backup's trailer is truncated: %w", unexpected(err))
			}
			var want [sha256.Size]byte
			if _, err := io.ReadFull(rd.r, want[:]); err != nil {
				return n, fmt.Errorf("the backup's trailer is truncated: %w", unexpected(err))
			}
			rd.n += 1 + int64(len(binary.AppendUvarint(nil, count))) + sha256.Size
			if count != uint64(n) {
				return n, fmt.Errorf("the backup holds %d records, its trailer says %d", n, count)
			}
			if !bytes.Equal(sum, want[:]) {
				return n, errors.New("the backup's checksum does not match: it is corrupted")
			}
			if _, err := rd.r.ReadByte(); err != io.EOF {
				return n, errors.New("the backup has bytes after its trailer")
			}
			return n, nil
		case kindKV:
			rd.h.Write([]byte{kind})
			rd.n++
			key, err := rd.field()
			if err != nil {
				return n, err
			}
			val, err := rd.field()
			if err != nil {
				return n, err
			}
			exp, err := rd.uvarint()
			if err != nil {
				return n, fmt.Errorf("the backup is truncated in record %d: %w", n+1, unexpected(err))
			}
			if err := put(key, val, exp); err != nil {
				return n, err
			}
			n++
		case kindBlob:
			rd.h.Write([]byte{kind})
			rd.n++
			if err := rd.blob(); err != nil {
				return n, err
			}
			rd.blobs++
			n++
		default:
			return n, fmt.Errorf("the backup is corrupted: unknown record kind %d after %d records", kind, n)
		}
	}
}

// blob reads one blob file and, unless only checking, writes it where the
// blob package keeps it, checking its bytes against its sha256.
func (rd *reader) blob() error {
	tenant, err := rd.field()
	if err != nil {
		return err
	}
	sha, err := rd.field()
	if err != nil {
		return err
	}
	if !blob.ValidSHA256(string(sha)) || strings.ContainsAny(string(tenant), "/.\\") || len(tenant) == 0 {
		return fmt.Errorf("the backup is corrupted: a blob file named %q of %q", sha, tenant)
	}
	size, err := rd.uvarint()
	if err != nil {
		return fmt.Errorf("the backup is truncated: %w", unexpected(err))
	}
	var out io.Writer = io.Discard
	var f *os.File
	var path string
	if rd.blobDir != "" {
		path = blob.PathIn(rd.blobDir, string(tenant), string(sha))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if f, err = os.Create(path); err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	sum := sha256.New()
	copied, err := io.Copy(io.MultiWriter(out, sum, rd.h), io.LimitReader(rd.r, int64(size)))
	rd.n += copied
	if err != nil {
		return err
	}
	if copied != int64(size) {
		return fmt.Errorf("the backup is truncated in blob %s: %w", sha, io.ErrUnexpectedEOF)
	}
	if hex.EncodeToString(sum.Sum(nil)) != strings.ToLower(string(sha)) {
		return fmt.Errorf("the backup is corrupted: blob %s does not hash to its name", sha)
	}
	if f != nil {
		return f.Sync()
	}
	return nil
}

func (rd *reader) field() ([]byte, error) {
	l, err := rd.uvarint()
	if err != nil {
		return nil, fmt.Errorf("the backup is truncated: %w", unexpected(err))
	}
	b, err := rd.full(l)
	if err != nil {
		return nil, fmt.Errorf("the backup is truncated: %w", unexpected(err))
	}
	return b, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// syncTree fsyncs every directory under root (the blob directories a
// restore made), so the names in them survive a power failure.
func syncTree(root string) error {
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return syncDir(path)
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil // no blobs
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
