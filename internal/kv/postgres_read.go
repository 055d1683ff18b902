package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// postgresReader reads the store in PostgreSQL at one instant: its first
// read begins a REPEATABLE READ READ ONLY transaction on a connection of
// its own (BEGIN sent with that read, in one round trip), and every later
// read is in it, as a Badger snapshot or etcd's fixed revision. discard
// ends it. A reader that never reads takes no connection.
type postgresReader struct {
	e *postgresEngine

	mu     sync.Mutex // reads may come from the cursor of a scan and from gets in its callback
	conn   *pgxpool.Conn
	failed error // the transaction could not be begun; every read fails
}

func (e *postgresEngine) reader() reader { return &postgresReader{e: e} }

// snapshotReader begins its transaction now, with a read: PostgreSQL takes
// a REPEATABLE READ snapshot at the first statement after BEGIN.
func (e *postgresEngine) snapshotReader() (reader, error) {
	r := &postgresReader{e: e}
	if err := r.query(func(q func(sql string, args ...any) (pgx.Rows, error)) error {
		rows, err := q("SELECT 1")
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}); err != nil {
		r.discard()
		return nil, err
	}
	return r, nil
}

// query runs fn with a query function on the reader's transaction, begun
// with fn's first query if it is not yet. A transaction that could not be
// begun because its connection had died (the server ended it while the
// pool held it idle) is begun again on another, up to one more time than
// the pool has connections (all may have died at once): it is read-only,
// and fn, run again, starts over.
func (r *postgresReader) query(fn func(q func(sql string, args ...any) (pgx.Rows, error)) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed != nil {
		return r.failed
	}
	ctx, cancel := r.e.ctx()
	defer cancel()
	if r.conn != nil {
		return fn(func(sql string, args ...any) (pgx.Rows, error) { return r.conn.Query(ctx, sql, args...) })
	}
	attempts := int(r.e.pool.Config().MaxConns) + 1
	for attempt := 1; ; attempt++ {
		conn, err := r.e.pool.Acquire(ctx)
		if err != nil {
			r.failed = fmt.Errorf("error taking a connection to read: %w", err)
			return r.failed
		}
		if err = begin(ctx, conn, fn); err == nil {
			r.conn = conn
			return nil
		}
		dead := conn.Conn().IsClosed()
		conn.Release() // a connection left in a transaction is closed by the pool
		if !dead || attempt == attempts {
			r.failed = err
			return err
		}
	}
}

// begin runs fn on conn, its first query sent in one batch after BEGIN.
func begin(ctx context.Context, conn *pgxpool.Conn, fn func(q func(sql string, args ...any) (pgx.Rows, error)) error) error {
	var br pgx.BatchResults
	sent := false
	err := fn(func(sql string, args ...any) (pgx.Rows, error) {
		if sent {
			// The batch's results end before the connection takes another
			// query.
			if br != nil {
				err := br.Close()
				br = nil
				if err != nil {
					return nil, err
				}
			}
			return conn.Query(ctx, sql, args...)
		}
		sent = true
		b := &pgx.Batch{}
		b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
		b.Queue(sql, args...)
		br = conn.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
		return br.Query()
	})
	if br != nil {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (r *postgresReader) get(key []byte) ([]byte, bool, error) {
	var val []byte
	found := false
	err := r.query(func(q func(string, ...any) (pgx.Rows, error)) error {
		val, found = nil, false
		rows, err := q(r.e.sql.get, r.e.shard, nonNil(key), time.Now().Unix())
		if err != nil {
			return err
		}
		defer rows.Close()
		if rows.Next() {
			found = true
			if err := rows.Scan(&val); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, false, fmt.Errorf("error reading from PostgreSQL: %w", err)
	}
	return val, found, nil
}

func (r *postgresReader) has(key []byte) (bool, error) {
	found := false
	err := r.query(func(q func(string, ...any) (pgx.Rows, error)) error {
		rows, err := q(r.e.sql.has, r.e.shard, nonNil(key), time.Now().Unix())
		if err != nil {
			return err
		}
		defer rows.Close()
		found = rows.Next()
		return rows.Err()
	})
	if err != nil {
		return false, fmt.Errorf("error reading from PostgreSQL: %w", err)
	}
	return found, nil
}

// discard ends the transaction and gives the connection back, on a
// goroutine of its own: the writer discards its segment's reader and must
// not wait for the round trip.
func (r *postgresReader) discard() {
	r.mu.Lock()
	conn := r.conn
	r.conn = nil
	if r.failed == nil {
		r.failed = errors.New("kv: read after discard")
	}
	r.mu.Unlock()
	if conn == nil {
		return
	}
	go func() {
		ctx, cancel := r.e.ctx()
		defer cancel()
		// A connection still in a transaction is closed by the pool.
		_, _ = conn.Exec(ctx, "ROLLBACK")
		conn.Release()
	}()
}

// nonNil is b, or an empty key for nil (nil would be sent as NULL).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (r *postgresReader) scan(prefix, after []byte, reverse, withValues bool) cursor {
	lo, hi := nonNil(bytes.Clone(prefix)), []byte(nil)
	if end, ok := prefixEnd(string(prefix)); ok {
		hi = []byte(end)
	}
	if after != nil {
		if reverse {
			if hi == nil || bytes.Compare(after, hi) < 0 {
				hi = bytes.Clone(after)
			}
		} else if next := append(bytes.Clone(after), 0); bytes.Compare(next, lo) > 0 {
			lo = next
		}
	}
	c := &postgresCursor{r: r, lo: lo, hi: hi, reverse: reverse, withValues: withValues, now: time.Now().Unix()}
	c.fill()
	return c
}

// postgresRow is one key a scan read.
type postgresRow struct {
	k, v []byte
	exp  int64
}

// postgresCursor walks a range a page (postgresPage keys) at a time;
// expired keys are left out by the query.
type postgresCursor struct {
	r          *postgresReader
	lo, hi     []byte // what is left to read: [lo, hi), hi nil for no bound
	reverse    bool
	withValues bool
	now        int64
	page       []postgresRow
	i          int
	last       bool // the page read was the range's last
	failed     error
}

// fill reads the next page once the current one is used up.
func (c *postgresCursor) fill() {
	if c.i < len(c.page) || c.last || c.failed != nil {
		return
	}
	if c.hi != nil && bytes.Compare(c.lo, c.hi) >= 0 {
		c.page, c.i, c.last = nil, 0, true
		return
	}
	bounded, rev, vals := 0, 0, 0
	args := []any{c.r.e.shard, c.now, c.lo}
	if c.hi != nil {
		bounded = 1
		args = append(args, c.hi)
	}
	if c.reverse {
		rev = 1
	}
	if c.withValues {
		vals = 1
	}
	var page []postgresRow
	err := c.r.query(func(q func(string, ...any) (pgx.Rows, error)) error {
		page = c.page[:0]
		rows, err := q(c.r.e.sql.scans[rev][bounded][vals], args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var row postgresRow
			if err := rows.Scan(&row.k, &row.v, &row.exp); err != nil {
				return err
			}
			page = append(page, row)
		}
		return rows.Err()
	})
	if err != nil {
		c.failed, c.page = fmt.Errorf("error scanning PostgreSQL: %w", err), nil
		return
	}
	c.page, c.i = page, 0
	c.last = len(page) < postgresPage
	if len(page) > 0 {
		k := page[len(page)-1].k
		if c.reverse {
			c.hi = bytes.Clone(k)
		} else {
			c.lo = append(bytes.Clone(k), 0)
		}
	}
}

func (c *postgresCursor) valid() bool            { return c.i < len(c.page) }
func (c *postgresCursor) key() []byte            { return c.page[c.i].k }
func (c *postgresCursor) value() ([]byte, error) { return c.page[c.i].v, nil }
func (c *postgresCursor) expiresAt() uint64      { return uint64(c.page[c.i].exp) }
func (c *postgresCursor) next()                  { c.i++; c.fill() }
func (c *postgresCursor) err() error             { return c.failed }
func (c *postgresCursor) close()                 {}
