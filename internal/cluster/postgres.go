package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tether-run/tether/internal/kv"
)

// postgresCoordinator keeps the cluster in PostgreSQL, in the tables of
// Config.Schema (internal/pgschema): a session is a members row whose
// expires_at, by the database's clock, each renewal pushes a TTL on; a
// shard's owner is its shard_owners row, taken with a new epoch; each
// shard's records are its rows of kv, every write of a term checking the
// owner row (kv.OpenPostgres). There is no watch: every server reads the
// few rows of members and shard_owners every poll interval. The SQL is
// plain enough for CockroachDB and YugabyteDB (no LISTEN, no advisory
// locks).
type postgresCoordinator struct {
	cfg  Config
	log  *slog.Logger
	pool *pgxpool.Pool
	// renewals is a pool of one connection of its own for the session's
	// renewals, so that a pool busy with the shards' writes (or campaigns
	// waiting on row locks) never holds a renewal up until the session
	// expires.
	renewals *pgxpool.Pool
	// batcher sends the commits of the shards served here that fall
	// together as one transaction.
	batcher *kv.PostgresBatcher
	// members, owners and meta are the tables' quoted names.
	members, owners, meta string
	// poll is how often the view is read again and a campaign tries again.
	poll time.Duration
}

func newPostgresCoordinator(cfg Config) (*postgresCoordinator, error) {
	rc := cfg.Postgres.Config().Copy()
	rc.MaxConns, rc.MinConns = 1, 0
	renewals, err := pgxpool.NewWithConfig(context.Background(), rc)
	if err != nil {
		return nil, fmt.Errorf("error making the session's connection pool: %w", err)
	}
	table := func(name string) string { return pgx.Identifier{cfg.Schema, name}.Sanitize() }
	return &postgresCoordinator{
		cfg: cfg, log: cfg.Logger, pool: cfg.Postgres, renewals: renewals,
		batcher: kv.NewPostgresBatcher(cfg.Postgres, kv.PostgresBatcherOptions{Logger: cfg.Logger}),
		members: table("members"), owners: table("shard_owners"), meta: table("meta"),
		poll: pollInterval(cfg.LeaseTTL),
	}, nil
}

// pollInterval is a sixth of the lease TTL, within 100-250 ms: a server
// sees a change (a member gone, a shard freed) well within the time a
// takeover waits anyway, and a few servers polling two small tables cost
// the database little.
func pollInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/6, 100*time.Millisecond), 250*time.Millisecond)
}

func (c *postgresCoordinator) store() string { return "PostgreSQL" }

func (c *postgresCoordinator) close() {
	c.batcher.Close()
	c.renewals.Close()
}

func (c *postgresCoordinator) backupAdvice() string {
	return "with TETHER_STORE=postgres the records live in PostgreSQL: back the schema " + c.cfg.Schema + " up with pg_dump or the database's own backups (and the blob directory with a file copy)"
}

// checkShards writes the shard count once and every shard's owner row
// (without an owner), then compares the stored count with this server's.
func (c *postgresCoordinator) checkShards(ctx context.Context, shards int) error {
	_, err := c.pool.Exec(ctx, `INSERT INTO `+c.meta+` (name, value) VALUES ('shards', $1) ON CONFLICT (name) DO NOTHING`, fmt.Sprint(shards))
	if err != nil {
		return fmt.Errorf("error writing the cluster's shard count to PostgreSQL: %w", err)
	}
	var have string
	if err := c.pool.QueryRow(ctx, `SELECT value FROM `+c.meta+` WHERE name = 'shards'`).Scan(&have); err != nil {
		return fmt.Errorf("error reading the cluster's shard count from PostgreSQL: %w", err)
	}
	if have != fmt.Sprint(shards) {
		return fmt.Errorf("the cluster in schema %s has %s shards (%s.meta) and this server was started with %d: the shard count cannot change", c.cfg.Schema, have, c.cfg.Schema, shards)
	}
	_, err = c.pool.Exec(ctx, `INSERT INTO `+c.owners+` (shard, owner, epoch, since)
		SELECT g, NULL, 0, now() FROM generate_series(0, $1::int - 1) AS g
		ON CONFLICT (shard) DO NOTHING`, shards)
	if err != nil {
		return fmt.Errorf("error writing the shards' owner rows to PostgreSQL: %w", err)
	}
	return nil
}

// ready is nil when the database answers.
func (c *postgresCoordinator) ready(ctx context.Context) error {
	var one int
	if err := c.pool.QueryRow(ctx, `SELECT 1 FROM `+c.meta+` WHERE name = 'shards'`).Scan(&one); err != nil {
		return fmt.Errorf("PostgreSQL does not answer: %w", err)
	}
	return nil
}

// join inserts this server's member row, and deletes the rows of earlier
// sessions at the same advertise URL: they are sessions of this server that
// ended (a server closes its shards before it joins again), or of one that
// was killed and started again, and their shards are free to take at once.
func (c *postgresCoordinator) join(ctx context.Context, advertise string, leaving bool, renewed func(time.Time)) (session, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	sent := time.Now()
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM `+c.members+` WHERE url = $1`, advertise); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+c.members+` (id, url, leaving, expires_at) VALUES ($1, $2, $3, now() + $4::interval)`,
			id, advertise, leaving, c.cfg.LeaseTTL)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error registering as a cluster member in PostgreSQL: %w", err)
	}
	renewed(sent)
	kctx, stop := context.WithCancel(context.Background())
	s := &postgresSession{c: c, sid: id, ended: make(chan struct{}), stop: stop}
	go s.keepAlive(kctx, sent, renewed)
	return s, nil
}

// postgresSession is a members row kept alive by this server.
type postgresSession struct {
	c     *postgresCoordinator
	sid   string
	ended chan struct{}
	once  sync.Once
	stop  context.CancelFunc // ends keepAlive
}

func (s *postgresSession) id() string            { return s.sid }
func (s *postgresSession) done() <-chan struct{} { return s.ended }

func (s *postgresSession) finish() { s.once.Do(func() { close(s.ended) }) }

// keepAlive renews the member row every third of the TTL until ctx ends.
// A renewal moves expires_at only while the row is unexpired, so a session
// the others may already count dead never comes back: the row gone or
// expired, or no renewal answered for a TTL since the last answered one
// was sent, ends the session.
func (s *postgresSession) keepAlive(ctx context.Context, lastSent time.Time, renewed func(time.Time)) {
	ttl := s.c.cfg.LeaseTTL
	wait := ttl / 3
	for {
		sleep(ctx, wait)
		if ctx.Err() != nil {
			return
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, ttl/3)
		tag, err := s.c.renewals.Exec(rctx, `UPDATE `+s.c.members+` SET expires_at = now() + $2::interval WHERE id = $1 AND expires_at > now()`, s.sid, ttl)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && tag.RowsAffected() == 1:
			renewed(sent)
			lastSent, wait = sent, ttl/3
		case err == nil:
			s.c.log.Warn("the session's member row expired or was deleted", "id", s.sid)
			s.finish()
			return
		case time.Since(lastSent) >= ttl:
			s.c.log.Warn("no renewal of the session answered for a lease TTL", "id", s.sid, "err", err)
			s.finish()
			return
		default:
			s.c.log.Warn("error renewing the session; retrying", "id", s.sid, "err", err)
			wait = s.c.poll
		}
	}
}

func (s *postgresSession) markLeaving(ctx context.Context) error {
	tag, err := s.c.pool.Exec(ctx, `UPDATE `+s.c.members+` SET leaving = true WHERE id = $1 AND expires_at > now()`, s.sid)
	if err == nil && tag.RowsAffected() == 0 {
		err = errors.New("the session has ended")
	}
	return err
}

// end frees every shard the session owns and deletes its member row, in
// one transaction.
func (s *postgresSession) end(timeout time.Duration) error {
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return pgx.BeginFunc(ctx, s.c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE `+s.c.owners+` SET owner = NULL, since = now() WHERE owner = $1`, s.sid); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM `+s.c.members+` WHERE id = $1`, s.sid)
		return err
	})
}

// campaign takes shard k when it has no owner, or its owner's session is
// over (its member row gone or expired), trying again every poll interval
// until then. Taking it starts a new epoch. The UPDATE waits for the row
// locks of the old owner's writes in flight (each takes the row FOR SHARE
// to check its epoch), so none of them commits after it: that is the
// fence.
func (s *postgresSession) campaign(ctx context.Context, k int) (term, error) {
	for {
		var epoch int64
		err := s.c.pool.QueryRow(ctx, `UPDATE `+s.c.owners+` AS o SET owner = $2, epoch = o.epoch + 1, since = now()
			WHERE o.shard = $1
			  AND (o.owner IS NULL OR o.owner = $2
			       OR NOT EXISTS (SELECT 1 FROM `+s.c.members+` m WHERE m.id = o.owner AND m.expires_at > now()))
			  AND EXISTS (SELECT 1 FROM `+s.c.members+` me WHERE me.id = $2 AND me.expires_at > now())
			RETURNING o.epoch`, k, s.sid).Scan(&epoch)
		if err == nil {
			return &postgresTerm{c: s.c, k: k, owner: s.sid, epoch: epoch}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		sleep(ctx, s.c.poll)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// postgresTerm is an epoch of this server as a shard's owner.
type postgresTerm struct {
	c     *postgresCoordinator
	k     int
	owner string
	epoch int64
}

func (t *postgresTerm) number() int64 { return t.epoch }

func (t *postgresTerm) current(ctx context.Context) bool {
	var one int
	err := t.c.pool.QueryRow(ctx, `SELECT 1 FROM `+t.c.owners+` WHERE shard = $1 AND owner = $2 AND epoch = $3`, t.k, t.owner, t.epoch).Scan(&one)
	return err == nil
}

func (t *postgresTerm) resign(ctx context.Context) error {
	_, err := t.c.pool.Exec(ctx, `UPDATE `+t.c.owners+` SET owner = NULL, since = now() WHERE shard = $1 AND owner = $2 AND epoch = $3`, t.k, t.owner, t.epoch)
	return err
}
