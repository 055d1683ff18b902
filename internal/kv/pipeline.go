package kv

// The logger of an engine that keeps several groups' commits in flight
// (etcd: etcd_pipeline.go). It begins each group's commit as soon as the
// writer hands it over, up to the engine's depth, and a second goroutine
// answers the groups strictly in the order they were begun, each only once
// it committed and every group before it did: the first failure breaks the
// store, and every group after it is answered fault.ErrUnavailable whatever
// became of its own commit.

// pipeliner is an engine that keeps several groups' commits in flight.
type pipeliner interface {
	// pipelineDepth is how many groups may be in flight at once.
	pipelineDepth() int
	// begin starts making group durable, after every group begun before it,
	// and returns what waits for the outcome. Called from one goroutine, in
	// commit order.
	begin(group []*inflight) (wait func() error)
}

// pending is a group begun and not yet answered.
type pending struct {
	group []*inflight
	wait  func() error
}

// pipeLoop is logLoop for a pipeliner.
func (s *Store) pipeLoop(p pipeliner) {
	depth := max(p.pipelineDepth(), 1)
	slots := make(chan struct{}, depth)
	begun := make(chan pending, depth)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		defer close(s.applyq)
		for g := range begun {
			s.answer(g)
			<-slots
		}
	}()
	for f := range s.commq {
		// A free slot first, then the group: what arrives while the
		// pipeline is full joins the next group.
		slots <- struct{}{}
		if s.beforeDurable != nil {
			s.beforeDurable()
		}
		group := drain(s.commq, []*inflight{f})
		wait := func() error { return errBroken }
		if !s.broken.Load() {
			wait = p.begin(group)
		}
		begun <- pending{group: group, wait: wait}
	}
	close(begun)
	<-answered
}

// answer waits for a begun group and answers it: logged once it committed
// and the store is not broken (every group before it committed), else
// unavailable.
func (s *Store) answer(g pending) {
	err := g.wait()
	if err == nil && s.broken.Load() {
		err = errBroken
	}
	if err != nil {
		s.fail(err)
		unavailable(g.group)
		return
	}
	s.logged(g.group)
}
