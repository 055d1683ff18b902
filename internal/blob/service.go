package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/startstop"
	"github.com/tether-run/tether/internal/testsignal"
)

// Defaults.
const (
	// DefaultMaxBytes is the largest blob unless configured (TETHER_BLOB_MAX_BYTES).
	DefaultMaxBytes = 32 << 20
	// DefaultGrace is how long a blob no node names is kept (TETHER_BLOB_GRACE_MS).
	DefaultGrace = time.Hour
	// DefaultContentType is the type of a blob uploaded without one.
	DefaultContentType = "application/octet-stream"
	// collectBatch bounds the blobs one sweep step collects.
	collectBatch = 256
	// maxContentType bounds a content type, as uploaded.
	maxContentType = 255
)

// Config configures a Service.
type Config struct {
	// Dir holds the blob files (DATA_DIR/blobs); made when missing.
	Dir    string
	Store  *graphstore.Store
	Clock  clock.Clock // the store's when nil
	Logger *slog.Logger
	// MaxBytes is the largest blob (DefaultMaxBytes when zero).
	MaxBytes int64
	// Grace is how long a blob no node names is kept (DefaultGrace when zero).
	Grace time.Duration
	// Quota is the most bytes a tenant's blobs may take together (0: no cap).
	Quota func(ctx context.Context, tenant string) (int64, error)
}

// Service stores blobs: their bytes as files in Dir, their records in the
// graph. See doc.go for the invariants.
type Service struct {
	// The timed sweeps run between Start and Stop (startstop's: Stop waits
	// for a sweep under way, which stops at its next write).
	startstop.BaseStartStop

	// TestSignals tell tests that a timed sweep ran; off unless a test
	// enables them.
	TestSignals TestSignals

	dir      string
	store    *graphstore.Store
	clock    clock.Clock
	log      *slog.Logger
	maxBytes int64
	grace    time.Duration
	quota    func(ctx context.Context, tenant string) (int64, error)

	// stripes serialise, per (tenant, sha), the making and the removal of a
	// blob's file with its record, so a file exists exactly while its record
	// does (but for a crash, which open tidies).
	stripes [64]sync.Mutex

	// holds counts the backups reading files (Hold); deferred are the
	// files collected meanwhile, removed when the last hold ends.
	holdMu   sync.Mutex
	holds    int
	deferred []string

	mu    sync.Mutex // guards timer
	timer clock.Timer
	wake  chan struct{}
}

// TestSignals are the blob collector's signals to tests.
type TestSignals struct {
	// Swept carries the outcome of each timed sweep.
	Swept testsignal.Signal[Sweep]
}

// Sweep is what one timed sweep did.
type Sweep struct {
	Collected int   // blobs removed
	Err       error // why it stopped early, if it did
}

// Blob is a stored blob's metadata.
type Blob struct {
	SHA256      string
	Size        int64
	ContentType string
	CreatedAt   time.Time
}

// Open prepares the blob directory: it removes what crashed uploads and
// collections left (see tidy) and returns the service. Start begins the
// collection of unreferenced blobs.
func Open(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Dir == "" {
		return nil, errors.New("blob: a store and a directory are required")
	}
	cfg.Clock = clock.Or(cfg.Clock, cfg.Store.Clock())
	cfg.Logger = logger.OrDiscard(cfg.Logger)
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Quota == nil {
		cfg.Quota = func(context.Context, string) (int64, error) { return 0, nil }
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Service{
		dir: dir, store: cfg.Store, clock: cfg.Clock, log: cfg.Logger, maxBytes: cfg.MaxBytes,
		grace: cfg.Grace, quota: cfg.Quota, wake: make(chan struct{}, 1),
	}
	if err := mkdirSynced(dir); err != nil {
		return nil, fmt.Errorf("error making the blob directory: %w", err)
	}
	known := map[string]bool{}
	err = cfg.Store.BlobList(func(id graphstore.BlobID, _ *records.BlobRecord) error {
		known[s.path(id.Tenant, id.SHA)] = true
		return nil
	})
	if err == nil {
		var removed int
		removed, err = s.tidy(known)
		if removed > 0 {
			s.log.Info("removed blob files with no record", "count", removed)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("error tidying the blob directory %s: %w", dir, err)
	}
	return s, nil
}

// MaxBytes is the largest blob the service takes.
func (s *Service) MaxBytes() int64 { return s.maxBytes }

// Grace is how long an unreferenced blob is kept.
func (s *Service) Grace() time.Duration { return s.grace }

// ValidSHA256 reports whether sha names a blob: 64 lowercase hex characters.
func ValidSHA256(sha string) bool {
	if len(sha) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(sha); i++ {
		c := sha[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ContentType checks and normalises a content type; empty is DefaultContentType.
func ContentType(ct string) (string, error) {
	ct = strings.TrimSpace(ct)
	if ct == "" {
		return DefaultContentType, nil
	}
	if len(ct) > maxContentType {
		return "", fault.Invalidf("Content-Type", "must be at most %d characters", maxContentType)
	}
	typ, params, err := mime.ParseMediaType(ct)
	if err != nil || !strings.Contains(typ, "/") {
		return "", fault.Invalidf("Content-Type", "is not a media type (type/subtype)")
	}
	return mime.FormatMediaType(typ, params), nil
}

// PutParams ask to store a blob.
type PutParams struct {
	Tenant, By string
	// ContentType is the normalised type (see ContentType).
	ContentType string
	// Body is read to its end, or until it is over the limit.
	Body io.Reader
}

// Put streams Body to a temporary file, hashing it, and stores it under its
// sha256 in the tenant. created is false when the tenant had the blob
// already: its record (and first content type) is kept, and, if no node
// names it, its grace period starts again. Over MaxBytes, or over the
// tenant's quota, is a *fault.TooLarge.
func (s *Service) Put(ctx context.Context, p PutParams) (b Blob, created bool, err error) {
	tmp, size, sha, err := s.receive(p.Body)
	if err != nil {
		return Blob{}, false, err
	}
	defer func() {
		if tmp != "" {
			_ = os.Remove(tmp)
		}
	}()
	quota, err := s.quota(ctx, p.Tenant)
	if err != nil {
		return Blob{}, false, err
	}
	mu := s.stripe(p.Tenant, sha)
	mu.Lock()
	defer mu.Unlock()

	var exists bool
	if err := s.store.View(func(tx *graphstore.Tx) error {
		exists = tx.BlobExists(p.Tenant, sha)
		return nil
	}); err != nil {
		return Blob{}, false, err
	}
	if exists {
		var r *records.BlobRecord
		err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
			var err error
			r, err = tx.BlobTouch(p.Tenant, sha)
			return err
		})
		if err != nil {
			return Blob{}, false, fmt.Errorf("error touching blob: %w", err)
		}
		return toBlob(sha, r), false, nil
	}

	// The file takes its final name before the record is written, so a
	// record never names a missing file; a crash in between leaves a file
	// open tidies away.
	final := s.path(p.Tenant, sha)
	if err := mkdirSynced(filepath.Dir(final)); err != nil {
		return Blob{}, false, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return Blob{}, false, err
	}
	tmp = ""
	if err := syncDir(filepath.Dir(final)); err != nil {
		return Blob{}, false, err
	}
	r := &records.BlobRecord{Size: size, ContentType: p.ContentType, CreatedBy: p.By}
	var over *fault.TooLarge
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error {
		if used := tx.BlobUsage(p.Tenant); quota > 0 && used+size > quota {
			over = &fault.TooLarge{Limit: quota, Reason: fmt.Sprintf(
				"the blob (%d bytes) would take the tenant's blobs over its quota of %d bytes (%d in use)", size, quota, used)}
			return over
		}
		return tx.BlobInsert(p.Tenant, sha, r)
	})
	if err != nil {
		if over != nil {
			_ = os.Remove(final) // no record names it, and the stripe is held
		}
		return Blob{}, false, fmt.Errorf("error storing blob: %w", err)
	}
	return toBlob(sha, r), true, nil
}

// receive writes body to a new file in tmp, fsynced, and returns its path,
// size and sha256. The file is removed on any error.
func (s *Service) receive(body io.Reader) (path string, size int64, sha string, err error) {
	f, err := os.CreateTemp(filepath.Join(s.dir, tmpDir), "upload-*")
	if err != nil {
		return "", 0, "", err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	size, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(body, s.maxBytes+1))
	if err != nil {
		return "", 0, "", readError(err)
	}
	if size > s.maxBytes {
		return "", 0, "", &fault.TooLarge{Limit: s.maxBytes, Reason: fmt.Sprintf(
			"the blob exceeds the limit of %d bytes (TETHER_BLOB_MAX_BYTES)", s.maxBytes)}
	}
	if err := f.Sync(); err != nil {
		return "", 0, "", err
	}
	return f.Name(), size, hex.EncodeToString(h.Sum(nil)), nil
}

// readError keeps a known error from the body's reader (a limit, a
// malformed multipart body) and calls any other a body that could not be read.
func readError(err error) error {
	var tl *fault.TooLarge
	var inv *fault.Invalid
	if errors.As(err, &tl) || errors.As(err, &inv) {
		return err
	}
	return fault.Invalidf("", "the request body could not be read: it ended early or was malformed")
}

func toBlob(sha string, r *records.BlobRecord) Blob {
	return Blob{SHA256: sha, Size: r.Size, ContentType: r.ContentType, CreatedAt: r.CreatedAt}
}

// Get returns a blob's metadata and its file, open for reading; the caller
// closes it. Another tenant's blob, like a missing one, is a fault.NotFound.
func (s *Service) Get(tenant, sha string) (Blob, *os.File, error) {
	var r *records.BlobRecord
	if err := s.store.View(func(tx *graphstore.Tx) error {
		var err error
		r, err = tx.BlobGet(tenant, sha)
		return err
	}); err != nil {
		return Blob{}, nil, err
	}
	f, err := os.Open(s.path(tenant, sha))
	if errors.Is(err, fs.ErrNotExist) {
		// Collected between the read of its record and now.
		return Blob{}, nil, &fault.NotFound{What: "blob", ID: sha}
	}
	if err != nil {
		return Blob{}, nil, err
	}
	return toBlob(sha, r), f, nil
}

func (s *Service) stripe(tenant, sha string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tenant))
	_, _ = h.Write([]byte(sha))
	return &s.stripes[h.Sum32()%uint32(len(s.stripes))]
}
