package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/tether-run/tether/internal/kv"
)

// etcdCoordinator keeps the cluster in etcd under Config.Prefix: sessions
// on etcd leases, members/<id> and leaving/<id> on them, each shard's
// owner elected with concurrency.Election, each shard's records under
// s/NN/ guarded by the election key's create revision.
type etcdCoordinator struct {
	cfg Config
	log *slog.Logger
	// batcher sends the commits of the shards served here that fall
	// together as one etcd transaction (kv.EtcdBatcher).
	batcher *kv.EtcdBatcher
}

func newEtcdCoordinator(cfg Config) *etcdCoordinator {
	return &etcdCoordinator{cfg: cfg, log: cfg.Logger, batcher: kv.NewEtcdBatcher(cfg.Client, cfg.MaxTxnOps, 0, 0)}
}

func (c *etcdCoordinator) store() string { return "etcd" }

func (c *etcdCoordinator) close() { c.batcher.Close() }

func (c *etcdCoordinator) backupAdvice() string {
	return "with TETHER_STORE=etcd the records live in etcd: back them up with `etcdctl snapshot save` (and the blob directory with a file copy)"
}

func (c *etcdCoordinator) checkShards(ctx context.Context, shards int) error {
	key := c.cfg.Prefix + "meta/shards"
	want := strconv.Itoa(shards)
	resp, err := c.cfg.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, want)).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return fmt.Errorf("error reading the cluster's shard count from etcd: %w", err)
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 1 && string(kvs[0].Value) != want {
		return fmt.Errorf("the cluster at %s has %s shards (%s) and this server was started with %s: the shard count cannot change", c.cfg.Prefix, kvs[0].Value, key, want)
	}
	return nil
}

// ready is nil unless etcd does not answer or has an alarm raised
// (NOSPACE, CORRUPT).
func (c *etcdCoordinator) ready(ctx context.Context) error {
	resp, err := c.cfg.Client.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("etcd does not answer: %w", err)
	}
	if len(resp.Alarms) > 0 {
		var names []string
		for _, a := range resp.Alarms {
			names = append(names, a.Alarm.String())
		}
		return errors.New("etcd has an alarm raised: " + strings.Join(names, ", "))
	}
	return nil
}

func (c *etcdCoordinator) join(ctx context.Context, advertise string, leaving bool, renewed func(time.Time)) (session, error) {
	// The session's own context is not ctx: Close revokes the lease with it.
	granting := time.Now()
	sess, err := concurrency.NewSession(c.cfg.Client, concurrency.WithTTL(c.cfg.leaseSeconds()))
	if err != nil {
		return nil, fmt.Errorf("error starting an etcd session: %w", err)
	}
	renewed(granting)
	go c.followLease(sess, renewed)
	s := &etcdSession{c: c, sess: sess, sid: strconv.FormatInt(int64(sess.Lease()), 16)}
	puts := []clientv3.Op{clientv3.OpPut(c.cfg.Prefix+"members/"+s.sid, advertise, clientv3.WithLease(sess.Lease()))}
	if leaving {
		// A session that began while the server stops stays out of the
		// shards' desired owners, as the last one was.
		puts = append(puts, clientv3.OpPut(s.leavingKey(), "", clientv3.WithLease(sess.Lease())))
	}
	if _, err := c.cfg.Client.Txn(ctx).Then(puts...).Commit(); err != nil {
		_ = sess.Close()
		return nil, fmt.Errorf("error registering as a cluster member: %w", err)
	}
	return s, nil
}

// followLease tells renewed of every keepalive answer of sess's lease until
// the session ends (the session keeps the lease alive; this only listens).
func (c *etcdCoordinator) followLease(sess *concurrency.Session, renewed func(time.Time)) {
	ch, err := c.cfg.Client.KeepAlive(sess.Ctx(), sess.Lease())
	if err != nil {
		return
	}
	for range ch {
		renewed(time.Now())
	}
}

// etcdSession is a session on an etcd lease; the server id is the lease id
// in hex.
type etcdSession struct {
	c    *etcdCoordinator
	sess *concurrency.Session
	sid  string
}

func (s *etcdSession) id() string            { return s.sid }
func (s *etcdSession) done() <-chan struct{} { return s.sess.Done() }

func (s *etcdSession) leavingKey() string { return s.c.cfg.Prefix + "leaving/" + s.sid }

func (s *etcdSession) markLeaving(ctx context.Context) error {
	_, err := s.c.cfg.Client.Put(ctx, s.leavingKey(), "", clientv3.WithLease(s.sess.Lease()))
	return err
}

// end revokes the lease: the member key and every election key go at once,
// so the other servers take over without waiting for it to expire.
func (s *etcdSession) end(timeout time.Duration) error {
	s.sess.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := s.c.cfg.Client.Revoke(ctx, s.sess.Lease())
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil
	}
	return err
}

func (s *etcdSession) campaign(ctx context.Context, k int) (term, error) {
	el := concurrency.NewElection(s.sess, s.c.cfg.Prefix+"shards/"+shardName(k)+"/owner")
	// Canceled, Campaign deletes its key again.
	if err := el.Campaign(ctx, s.c.cfg.Advertise); err != nil {
		return nil, err
	}
	return &etcdTerm{c: s.c, k: k, el: el, key: el.Key(), rev: el.Rev()}, nil
}

// etcdTerm is an election won: its key and the key's create revision.
type etcdTerm struct {
	c   *etcdCoordinator
	k   int
	el  *concurrency.Election
	key string
	rev int64
}

func (t *etcdTerm) number() int64 { return t.rev }

func (t *etcdTerm) current(ctx context.Context) bool {
	resp, err := t.c.cfg.Client.Get(ctx, t.key)
	return err == nil && len(resp.Kvs) == 1 && resp.Kvs[0].CreateRevision == t.rev
}

func (t *etcdTerm) resign(ctx context.Context) error { return t.el.Resign(ctx) }

// openStore opens the shard's kv store on etcd, under the cluster's prefix
// s/NN/; every write carries the guard CreateRevision(key) == rev.
func (t *etcdTerm) openStore(log *slog.Logger, onDeposed func()) (*kv.Store, error) {
	return kv.OpenEtcd(kv.EtcdOptions{
		Client:    t.c.cfg.Client,
		Prefix:    t.c.cfg.Prefix + "s/" + shardName(t.k) + "/",
		Guard:     []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(t.key), "=", t.rev)},
		OnDeposed: onDeposed,
		MaxTxnOps: t.c.cfg.MaxTxnOps,
		Pipeline:  t.c.cfg.Pipeline,
		Batcher:   t.c.batcher,
		Logger:    log,
	})
}

// watch keeps the view's members, leaving members and owners up to date
// until ctx ends.
func (c *etcdCoordinator) watch(ctx context.Context, publish func(edit func(v *view))) {
	go c.watchMembers(ctx, publish)
	go c.watchLeaving(ctx, publish)
	c.watchOwners(ctx, publish)
}

func (c *etcdCoordinator) watchMembers(ctx context.Context, publish func(edit func(v *view))) {
	c.watchPrefix(ctx, c.cfg.Prefix+"members/", func(resp *clientv3.GetResponse) {
		// Of the members of one URL only the newest counts: an older one is
		// a session of the same server that ended, its lease not expired yet
		// (etcd had no quorum to expire or revoke it).
		members := map[string]string{}
		newest := map[string]int64{} // URL -> create revision
		for _, kv := range resp.Kvs {
			u := string(kv.Value)
			if rev, ok := newest[u]; ok && rev > kv.CreateRevision {
				continue
			}
			for id, mu := range members {
				if mu == u {
					delete(members, id)
				}
			}
			newest[u] = kv.CreateRevision
			members[strings.TrimPrefix(string(kv.Key), c.cfg.Prefix+"members/")] = u
		}
		publish(func(v *view) { v.members = members })
	})
}

func (c *etcdCoordinator) watchLeaving(ctx context.Context, publish func(edit func(v *view))) {
	pfx := c.cfg.Prefix + "leaving/"
	c.watchPrefix(ctx, pfx, func(resp *clientv3.GetResponse) {
		leaving := map[string]bool{}
		for _, kv := range resp.Kvs {
			leaving[strings.TrimPrefix(string(kv.Key), pfx)] = true
		}
		publish(func(v *view) { v.leaving = leaving })
	})
}

// watchOwners publishes each shard's owner: the election key of lowest
// create revision.
func (c *etcdCoordinator) watchOwners(ctx context.Context, publish func(edit func(v *view))) {
	pfx := c.cfg.Prefix + "shards/"
	c.watchPrefix(ctx, pfx, func(resp *clientv3.GetResponse) {
		owners := make([]owner, c.cfg.Shards)
		for _, kv := range resp.Kvs {
			// shards/NN/owner/<id>
			parts := strings.Split(strings.TrimPrefix(string(kv.Key), pfx), "/")
			if len(parts) != 3 || parts[1] != "owner" {
				continue
			}
			k, err := strconv.Atoi(parts[0])
			if err != nil || k < 0 || k >= c.cfg.Shards {
				continue
			}
			if o := owners[k]; o.id == "" || kv.CreateRevision < o.rev {
				owners[k] = owner{id: parts[2], url: string(kv.Value), rev: kv.CreateRevision}
			}
		}
		publish(func(v *view) { v.owners = owners })
	})
}

// watchPrefix calls apply with every key under prefix, read at once and
// again after each change (a watch is only the signal to read again: the
// few keys of members and elections are cheap to read, and a read after a
// lost or compacted watch is always right), until ctx ends.
func (c *etcdCoordinator) watchPrefix(ctx context.Context, prefix string, apply func(*clientv3.GetResponse)) {
	for ctx.Err() == nil {
		resp, err := c.cfg.Client.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("error reading the cluster's keys; retrying", "prefix", prefix, "err", err)
				sleep(ctx, 200*time.Millisecond)
			}
			continue
		}
		apply(resp)
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := c.cfg.Client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		for wr := range wch {
			if wr.Err() != nil {
				break
			}
			if len(wr.Events) > 0 {
				// Read again; drain what else queued up first.
				break
			}
		}
		cancel()
	}
}
