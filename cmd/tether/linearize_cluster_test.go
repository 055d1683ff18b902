package main

// The servers a linearizability run talks to, on either store, and the
// recording of every call made to them (linearize_test.go drives the load;
// linearize_etcd_test.go runs it on etcd).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/linearize"
)

// linLauncher starts the servers of one incarnation (epoch) of a cluster
// and returns them once they serve.
type linLauncher func(epoch int) []*proc

// linCluster is the servers of a run (Badger: one, restarted on the same
// data dir after each kill -9; etcd: several over one etcd cluster) and a
// client per identity for each. Calls go to the servers in turn. Calls hold
// gate for reading; a restart swaps the servers under it for writing.
type linCluster struct {
	t      *testing.T
	hc     *http.Client
	rec    *linearize.Recorder
	gate   sync.RWMutex
	launch linLauncher
	// restartable says restart may kill the servers and launch them again
	// (a store whose servers restart in place; on etcd a kill is a change
	// of owner, which the fault tests drive themselves).
	restartable bool
	servers     []*proc
	epoch       int
	turn        atomic.Uint64
	subs        map[string]string // identity -> role
	as          []map[string]*client.ClientWithResponses
	toks        map[string]string

	unexpected sync.Map // error text -> true: answers the contract does not allow
}

// newLinCluster is one server on Badger in a temporary data dir, restarted
// there after each kill -9.
func newLinCluster(t *testing.T, subs map[string]string) *linCluster {
	dir := t.TempDir()
	return newLinClusterOf(t, subs, true, func(epoch int) []*proc {
		return []*proc{startServer(t, fmt.Sprintf("epoch %d", epoch), dir)}
	})
}

// newLinClusterOf launches the first incarnation of a cluster, with a token
// (tenant acme) for each identity of subs, and waits until each server
// serves the tenant.
func newLinClusterOf(t *testing.T, subs map[string]string, restartable bool, launch linLauncher) *linCluster {
	c := &linCluster{t: t, hc: httpClient(t), rec: linearize.NewRecorder(), launch: launch, restartable: restartable, subs: subs, toks: map[string]string{}}
	for sub, role := range subs {
		c.toks[sub] = mint(t, sub, role)
	}
	c.servers = launch(0)
	c.connect()
	return c
}

// connect makes the clients of the current servers and waits until each
// serves the tenant (on etcd, until its shard has an owner).
func (c *linCluster) connect() {
	c.as = make([]map[string]*client.ClientWithResponses, len(c.servers))
	for i, p := range c.servers {
		c.as[i] = map[string]*client.ClientWithResponses{}
		for sub, tok := range c.toks {
			c.as[i][sub] = p.as(c.hc, tok)
		}
	}
	for i, p := range c.servers {
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, err := c.as[i]["dispatcher"].ListEventsWithResponse(context.Background(), &client.ListEventsParams{Limit: ptr(1)})
			if err == nil && res.StatusCode() == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("%s does not serve the tenant after 30 s: %v %s", p.name, err, body(res))
			}
			time.Sleep(20 * time.Millisecond) // an election in progress
		}
	}
}

// first is the clients of the first server, for what is not part of the
// history (creating nodes, reading the event feed).
func (c *linCluster) first() map[string]*client.ClientWithResponses { return c.as[0] }

// call sends in as in.Client to the next server in turn and records it.
func (c *linCluster) call(ctx context.Context, in linearize.Input) linearize.Output {
	c.gate.RLock()
	defer c.gate.RUnlock()
	as := c.as[int(c.turn.Add(1)%uint64(len(c.as)))]
	p := c.rec.Begin(in, c.epoch)
	out, err := callLease(ctx, as[in.Client], in)
	if err != nil {
		c.unexpected.Store(err.Error(), true)
	}
	p.End(out)
	return out
}

// restart kills the servers with SIGKILL while calls are in flight, and
// launches them again once every call to them has ended.
func (c *linCluster) restart() {
	c.t.Helper()
	if !c.restartable {
		c.t.Fatal("this cluster's servers are not restarted in place")
	}
	for _, p := range c.servers {
		p.kill9()
	}
	c.rec.Died()
	c.gate.Lock()
	defer c.gate.Unlock()
	c.epoch++
	call := linearize.Now()
	c.servers = c.launch(c.epoch)
	c.rec.Restarted(call, linearize.Now())
	c.connect()
}

// createNode makes a fresh queued node as the dispatcher, retrying across a
// restart (a create that got no answer may have made its node, so each try
// uses a new id). It is not part of the history: the model starts every node
// queued, as created.
func (c *linCluster) createNode(ctx context.Context, id func() string) (string, bool) {
	for try := 0; try < 50; try++ {
		c.gate.RLock()
		nid := id()
		res, err := c.first()["dispatcher"].CreateNodeWithResponse(ctx, nil, client.NodeCreate{
			ID: ptr(nid), Type: "task", Queue: ptr(linQueue), MaxAttempts: ptr(int64(linMaxAttempts)),
		})
		c.gate.RUnlock()
		if err == nil && res.StatusCode() == http.StatusCreated {
			return nid, true
		}
		if err == nil {
			c.t.Errorf("create %s: %d %s", nid, res.StatusCode(), res.Body)
			return "", false
		}
		time.Sleep(20 * time.Millisecond) // the server is restarting
	}
	c.t.Errorf("could not create a node across 50 tries")
	return "", false
}

// check runs porcupine over the history and fails the test unless it is
// linearizable. It returns the history's counts.
func (c *linCluster) check(name string) (linearize.Counts, linearize.Report) {
	c.t.Helper()
	c.unexpected.Range(func(k, _ any) bool {
		c.t.Errorf("an answer the contract does not allow: %v", k)
		return true
	})
	ops, counts := c.rec.History()
	rep := linearize.Check(linearize.DefaultConfig(linMaxAttempts), ops, checkTimeout, c.t.TempDir())
	c.t.Logf("%s: %d calls (%d with unknown outcome, %d of them dropped), %d restarts, %d nodes; %v",
		name, counts.Ops, counts.Unknown, counts.Dropped, counts.Restarts, counts.Nodes, rep)
	if rep.Result != porcupine.Ok { // Illegal, or a node porcupine could not decide
		// Keep the history past the test's temp dirs, for replay.
		if f, err := os.CreateTemp("", "tether-linearize-*.json"); err == nil {
			_ = json.NewEncoder(f).Encode(ops)
			f.Close()
			c.t.Logf("the history is kept in %s", f.Name())
		}
		c.t.Fatalf("%s: the history is not linearizable: %v", name, rep)
	}
	return counts, rep
}
