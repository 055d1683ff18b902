package fleet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

// Status is what a worker last said it was doing.
type Status string

// The statuses a heartbeat may report.
const (
	// StatusIdle is a worker waiting for work.
	StatusIdle Status = "idle"
	// StatusWorking is a worker running a node (named in the record).
	StatusWorking Status = "working"
	// StatusOffline is a worker that said goodbye.
	StatusOffline Status = "offline"
)

// Statuses lists every status.
func Statuses() []Status { return []Status{StatusIdle, StatusWorking, StatusOffline} }

// State is the one word every face of Tether (the API's state, the
// dashboard, the CLI) shows for a worker: its status, unless it went silent
// without saying goodbye.
type State string

// The states.
const (
	StateIdle    State = "idle"    // sent idle within the stale window
	StateWorking State = "working" // sent working within the stale window
	StateStale   State = "stale"   // silent for the stale window without saying offline
	StateOffline State = "offline" // said goodbye (a runner that stopped cleanly)
)

// States lists every state.
func States() []State { return []State{StateIdle, StateWorking, StateStale, StateOffline} }

// stateOf is rec's state at now, for a stale window.
func stateOf(rec Record, now time.Time, stale time.Duration) State {
	switch {
	case rec.Status == StatusOffline:
		return StateOffline
	case now.Sub(rec.LastSeenAt) >= stale:
		return StateStale
	}
	return State(rec.Status)
}

func (s Status) valid() bool {
	return s == StatusIdle || s == StatusWorking || s == StatusOffline
}

// Limits and defaults.
const (
	// DefaultStaleAfter is how long a worker may go without a heartbeat
	// before it is stale, unless the registry is configured otherwise.
	DefaultStaleAfter = 90 * time.Second
	// Retention is how long a record is kept after its last heartbeat.
	Retention = 24 * time.Hour
	// DefaultOfflineRetention is how long a worker that said offline is
	// kept after it did, unless the registry is configured otherwise: a
	// runner names its slots after its pid, so each process that stops
	// cleanly leaves rows that nothing will bring back.
	DefaultOfflineRetention = 10 * time.Minute
	// MaxMetaBytes bounds a worker's meta, encoded as JSON.
	MaxMetaBytes = 16 << 10
	// DefaultMaxPerIdentity and DefaultMaxPerTenant bound the workers
	// one identity, and one tenant, may hold at once, unless the registry
	// is configured otherwise: a first heartbeat past either is refused.
	// A worker holds its row until it is forgotten (see Retention).
	DefaultMaxPerIdentity = 1000
	DefaultMaxPerTenant   = 10000
	// capSlack is how near a cap a snapshot's count must be for the write
	// to count again, under the writer: a count far from the cap cannot
	// reach it through the first heartbeats in flight beside it.
	capSlack = 64
	// DefaultLimit and MaxLimit bound a page of List.
	DefaultLimit = 100
	MaxLimit     = 1000
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidName reports whether name may name a worker: 1-128 characters of
// [A-Za-z0-9._:-] starting with a letter or digit.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// View is a record as read at one instant.
type View struct {
	Record
	// State is what to show for the worker.
	State State
	// Stale is State == StateStale: no heartbeat came for the registry's
	// stale window and the worker never said offline.
	Stale bool
}

// Config configures a Registry.
type Config struct {
	Store *graphstore.Store
	// StaleAfter is TETHER_WORKER_STALE_MS (DefaultStaleAfter when zero).
	StaleAfter time.Duration
	// OfflineRetention is TETHER_WORKER_OFFLINE_RETENTION_MS
	// (DefaultOfflineRetention when zero): how long a worker that said
	// offline is listed after it did.
	OfflineRetention time.Duration
	// MaxPerIdentity and MaxPerTenant bound the workers listed at once for
	// one identity and for one tenant (DefaultMaxPerIdentity and
	// DefaultMaxPerTenant when zero).
	MaxPerIdentity, MaxPerTenant int
}

// Registry records worker heartbeats and answers who is alive.
type Registry struct {
	store     *graphstore.Store
	stale     time.Duration
	offline   time.Duration
	maxPerSub int
	maxPerTen int
}

// New makes a registry on cfg.Store, whose clock decides every instant.
func New(cfg Config) *Registry {
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	if cfg.OfflineRetention <= 0 {
		cfg.OfflineRetention = DefaultOfflineRetention
	}
	if cfg.MaxPerIdentity <= 0 {
		cfg.MaxPerIdentity = DefaultMaxPerIdentity
	}
	if cfg.MaxPerTenant <= 0 {
		cfg.MaxPerTenant = DefaultMaxPerTenant
	}
	return &Registry{store: cfg.Store, stale: cfg.StaleAfter, offline: cfg.OfflineRetention,
		maxPerSub: cfg.MaxPerIdentity, maxPerTen: cfg.MaxPerTenant}
}

// OfflineRetention is how long a worker that said offline stays listed.
func (r *Registry) OfflineRetention() time.Duration { return r.offline }

// retention is how long rec is kept after its last heartbeat.
func (r *Registry) retention(rec Record) time.Duration {
	if rec.Status == StatusOffline {
		return min(r.offline, Retention)
	}
	return Retention
}

// forgotten reports whether rec is past its retention at now: List leaves
// it out at once, on the store's clock, whenever the engine's own expiry
// (the wall clock) removes the record.
func (r *Registry) forgotten(rec Record, now time.Time) bool {
	return now.Sub(rec.LastSeenAt) >= r.retention(rec)
}

// StaleAfter is the registry's stale window.
func (r *Registry) StaleAfter() time.Duration { return r.stale }

// HeartbeatParams is one heartbeat.
type HeartbeatParams struct {
	Tenant string
	By     string // the authenticated identity
	Worker string
	Status Status
	Node   string // the node a working worker runs; "" for none
	// SetMeta replaces the worker's meta with Meta (nil clears it); without
	// it the last meta is kept.
	SetMeta bool
	Meta    map[string]any
}

func (p HeartbeatParams) validate() error {
	switch {
	case p.Worker == "":
		return fault.Invalidf("worker", "is required")
	case !ValidName(p.Worker):
		return fault.Invalidf("worker", "must be 1-128 characters of [A-Za-z0-9._:-] starting with a letter or digit")
	case p.Status == "":
		return fault.Invalidf("status", "is required")
	case !p.Status.valid():
		return fault.Invalidf("status", "must be idle, working or offline")
	case p.Node != "" && !graphstore.ValidID(p.Node):
		return fault.Invalidf("node", "is not a valid node id")
	case p.Node != "" && p.Status != StatusWorking:
		return fault.Invalidf("node", "only a working worker names a node")
	}
	if p.SetMeta && p.Meta != nil {
		b, err := json.Marshal(p.Meta)
		if err != nil {
			return fault.Invalidf("meta", "must be a JSON object")
		}
		if len(b) > MaxMetaBytes {
			return fault.Invalidf("meta", "must be at most %d bytes of JSON", MaxMetaBytes)
		}
	}
	return nil
}

// Heartbeat records that worker p.Worker of p.By is alive and what it does,
// and returns its record.
func (r *Registry) Heartbeat(ctx context.Context, p HeartbeatParams) (View, error) {
	if err := p.validate(); err != nil {
		return View{}, err
	}
	// A worker already listed holds its row, and the write alone serves
	// it. A first heartbeat (or one of a worker forgotten since) is counted
	// against the caps off the writer (checkRoom) and then written.
	rec, err := r.beat(ctx, p, false, false)
	if errors.Is(err, errFirstBeat) {
		var recount bool
		if recount, err = r.checkRoom(p); err != nil {
			return View{}, err
		}
		rec, err = r.beat(ctx, p, true, recount)
	}
	if err != nil {
		return View{}, fmt.Errorf("error recording a heartbeat: %w", err)
	}
	return r.view(rec, rec.LastSeenAt), nil
}

// errFirstBeat is beat's answer, writing nothing, to the first heartbeat
// of a worker whose room has not been counted.
var errFirstBeat = errors.New("a worker's first heartbeat, not yet counted against the caps")

// beat writes p's heartbeat. A worker not listed (or forgotten) is
// written only once counted (checkRoom); recount counts again under the
// writer, as checkRoom asks near a cap.
func (r *Registry) beat(ctx context.Context, p HeartbeatParams, counted, recount bool) (Record, error) {
	var rec Record
	// Not durable: a heartbeat is superseded by the next one within seconds,
	// so an fsync per heartbeat would buy nothing. A crash can lose only the
	// last few, which makes the worker look older than it is; after a crash
	// that is the truth anyway, and its next heartbeat sets it right.
	err := r.store.Update(ctx, func(tx *graphstore.Tx) error {
		now := tx.Now().UTC()
		var prev Record
		found, err := tx.Records().WorkerGet(p.Tenant, p.By, p.Worker, &prev)
		if err != nil {
			return err
		}
		if first := !found || r.forgotten(prev, now); first && !counted {
			return errFirstBeat
		} else if first && recount {
			if err := r.roomIn(tx, p.Tenant, p.By, now); err != nil {
				return err
			}
		}
		rec = Record{
			By: p.By, Worker: p.Worker, Status: p.Status, Node: p.Node,
			Meta: prev.Meta, StartedAt: prev.StartedAt, LastSeenAt: now,
		}
		if !found || prev.Status == StatusOffline || r.isStale(prev, now) {
			rec.StartedAt = now
		}
		if p.SetMeta {
			rec.Meta = p.Meta
		}
		return tx.Records().WorkerPut(p.Tenant, p.By, p.Worker, &rec, r.retention(rec))
	})
	return rec, err
}

// checkRoom refuses the first heartbeat of a worker whose identity or
// tenant holds its cap of workers, counted in a snapshot off the writer,
// and says whether the write must count again: when a count is within
// capSlack of its cap, first heartbeats racing this one could reach it.
func (r *Registry) checkRoom(p HeartbeatParams) (recount bool, err error) {
	err = r.store.View(func(tx *graphstore.Tx) error {
		now := tx.Now().UTC()
		var prev Record
		found, err := tx.Records().WorkerGet(p.Tenant, p.By, p.Worker, &prev)
		if err != nil || (found && !r.forgotten(prev, now)) {
			return err
		}
		subs, tenants, err := r.counts(tx, p.Tenant, p.By, now)
		if err != nil {
			return err
		}
		if err := r.refusal(p.By, subs, tenants); err != nil {
			return err
		}
		recount = subs >= r.maxPerSub-capSlack || tenants >= r.maxPerTen-capSlack
		return nil
	})
	return recount, err
}

// roomIn is checkRoom's count made again inside the write.
func (r *Registry) roomIn(tx *graphstore.Tx, tenant, by string, now time.Time) error {
	subs, tenants, err := r.counts(tx, tenant, by, now)
	if err != nil {
		return err
	}
	return r.refusal(by, subs, tenants)
}

func (r *Registry) refusal(by string, subs, tenants int) error {
	switch {
	case subs >= r.maxPerSub:
		return &fault.RateLimited{Reason: fmt.Sprintf("identity %q holds %d workers, the most one identity may hold; a worker is forgotten %s after it says offline, or %s after its last heartbeat", by, r.maxPerSub, r.offline, Retention), RetryAfter: time.Minute}
	case tenants >= r.maxPerTen:
		return &fault.RateLimited{Reason: fmt.Sprintf("the tenant holds %d workers, the most one tenant may hold; a worker is forgotten %s after it says offline, or %s after its last heartbeat", r.maxPerTen, r.offline, Retention), RetryAfter: time.Minute}
	}
	return nil
}

// counts counts the workers listed at now of identity by (up to its cap)
// and of the tenant (up to its cap). An identity at its cap is not counted
// further: the tenant's count is left at 0, since the identity's alone
// refuses the heartbeat, and a flood of refused ones costs no tenant scan.
func (r *Registry) counts(tx *graphstore.Tx, tenant, by string, now time.Time) (subs, tenants int, err error) {
	count := func(afterBy string, stop int, keep func(Record) bool) (int, error) {
		n := 0
		err := tx.Records().WorkerList(tenant, afterBy, "", func(raw []byte) (bool, error) {
			var rec Record
			if _, err := rec.UnmarshalMsg(raw); err != nil {
				return false, fmt.Errorf("error decoding a worker record: %w", err)
			}
			if !keep(rec) {
				return false, nil
			}
			if !r.forgotten(rec, now) {
				n++
			}
			return n < stop, nil
		})
		return n, err
	}
	// The identity's records sit together, from just after (by, "").
	if subs, err = count(by, r.maxPerSub, func(rec Record) bool { return rec.By == by }); err != nil || subs >= r.maxPerSub {
		return subs, 0, err
	}
	tenants, err = count("", r.maxPerTen, func(Record) bool { return true })
	return subs, tenants, err
}

func (r *Registry) isStale(rec Record, now time.Time) bool {
	return now.Sub(rec.LastSeenAt) >= r.stale
}

// view is rec as seen at now.
func (r *Registry) view(rec Record, now time.Time) View {
	st := stateOf(rec, now, r.stale)
	return View{Record: rec, State: st, Stale: st == StateStale}
}

// List returns one page of the tenant's workers in (by, worker) order and
// the cursor of the next page ("" at the end).
func (r *Registry) List(tenant, cursor string, limit int) ([]View, string, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	afterBy, afterWorker, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	var out []View
	more := false
	err = r.store.View(func(tx *graphstore.Tx) error {
		now := tx.Now()
		return tx.Records().WorkerList(tenant, afterBy, afterWorker, func(raw []byte) (bool, error) {
			if len(out) == limit {
				more = true
				return false, nil
			}
			var rec Record
			if _, err := rec.UnmarshalMsg(raw); err != nil {
				return false, fmt.Errorf("error decoding a worker record: %w", err)
			}
			if r.forgotten(rec, now) {
				return true, nil
			}
			out = append(out, r.view(rec, now))
			return true, nil
		})
	})
	if err != nil {
		return nil, "", fmt.Errorf("error listing workers: %w", err)
	}
	next := ""
	if more {
		last := out[len(out)-1]
		next = base64.RawURLEncoding.EncodeToString([]byte("w:" + last.By + "\x00" + last.Worker))
	}
	return out, next, nil
}

func decodeCursor(cursor string) (by, worker string, err error) {
	if cursor == "" {
		return "", "", nil
	}
	raw, decErr := base64.RawURLEncoding.DecodeString(cursor)
	rest, ok := strings.CutPrefix(string(raw), "w:")
	if decErr == nil && ok {
		by, worker, ok = strings.Cut(rest, "\x00")
	}
	if decErr != nil || !ok || !graphstore.ValidSubject(by) || !ValidName(worker) {
		return "", "", fault.Invalidf("cursor", "not a cursor of this list")
	}
	return by, worker, nil
}
