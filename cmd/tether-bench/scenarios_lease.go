package main

import (
	"fmt"
	"net/http"
)

// Lease scenarios by node id: (c) claim → renew → release cycles, (d)
// renewals of held leases.

// Nodes per client in (c) and (d).
const (
	cycleNodes = 4
	renewNodes = 10
)

// ownNodes creates perClient open nodes (no queue) for every client, in the
// client's tenant; client i's are prefix-i-0 ... and returned by client.
func (s *stage) ownNodes(prefix string, perClient int) ([][]string, error) {
	clients := s.b.cfg.clients
	ids := make([][]string, clients)
	for i := range ids {
		for j := range perClient {
			ids[i] = append(ids[i], fmt.Sprintf("%s%d-%d", prefix, i, j))
		}
	}
	tenantOf := func(k int) int { return s.b.cfg.tenantOf(k / perClient) }
	_, err := s.createNodesBy(clients*perClient, tenantOf, func(dst []byte, k int) []byte {
		dst = append(dst, `{"id":"`...)
		dst = append(dst, ids[k/perClient][k%perClient]...)
		return append(dst, `","type":"task"}`...)
	})
	return ids, err
}

// scenarioC: each client cycles its own nodes through claim, renew, release.
func (b *bench) scenarioC() ([]*result, error) {
	s, err := b.open("c")
	if err != nil {
		return nil, err
	}
	ids, err := s.ownNodes("c-", cycleNodes)
	if err != nil {
		s.abort()
		return nil, err
	}
	ws := s.workers()
	dr := s.drive(ws, b.cfg.warmup, b.cfg.duration, func(w *worker) {
		mine := ids[w.i]
		claimBody := []byte(`{}`)
		for k := 0; !w.over(); k++ {
			id := mine[k%len(mine)]
			st, resp, measured := w.call("claim_id", "POST", "/v1/nodes/"+id+"/claim", claimBody)
			if st != http.StatusOK {
				continue
			}
			c, ok := parseClaim(resp)
			if !ok {
				w.rec.fail("claim_id: unparsable answer")
				continue
			}
			w.scratch = fenceBody(w.scratch, c.fence)
			st1, _, _ := w.call("renew", "POST", "/v1/nodes/"+id+"/renew", w.scratch)
			st2, _, _ := w.call("release", "POST", "/v1/nodes/"+id+"/release", w.scratch)
			if st1 == http.StatusOK && st2 == http.StatusOK && measured {
				w.ops++
			}
		}
	})
	ops, rec := totals(ws)
	r := s.result("c", dr.cpu.server)
	r.fill(ops, b.cfg.duration, rec)
	r.note("ops are claim+renew+release cycles; %d open nodes per client, taken in turn", cycleNodes)
	cpuNote(r, dr.cpu)
	storeNote(r, dr.store, ops)
	return []*result{r}, s.close()
}

// scenarioD: each client claims its own 10 nodes, then renews them in turn.
func (b *bench) scenarioD() ([]*result, error) {
	s, err := b.open("d")
	if err != nil {
		return nil, err
	}
	ids, err := s.ownNodes("d-", renewNodes)
	if err != nil {
		s.abort()
		return nil, err
	}
	ws := s.workers()
	// Claim outside the measurement, keeping each lease's renew request.
	type held struct{ path, body string }
	leases := make([][]held, len(ws))
	for _, w := range ws {
		for _, id := range ids[w.i] {
			resp, err := w.c.must("POST", "/v1/nodes/"+id+"/claim", []byte(`{"ttl_ms":600000}`), http.StatusOK)
			if err != nil {
				s.abort()
				return nil, err
			}
			c, ok := parseClaim(resp)
			if !ok {
				s.abort()
				return nil, fmt.Errorf("unparsable claim answer: %.200s", resp)
			}
			leases[w.i] = append(leases[w.i], held{"/v1/nodes/" + id + "/renew", string(fenceBody(nil, c.fence))})
		}
	}
	dr := s.drive(ws, b.cfg.warmup, b.cfg.duration, func(w *worker) {
		mine := leases[w.i]
		bodies := make([][]byte, len(mine))
		for i, h := range mine {
			bodies[i] = []byte(h.body)
		}
		for k := 0; !w.over(); k++ {
			i := k % len(mine)
			if st, _, measured := w.call("renew", "POST", mine[i].path, bodies[i]); st == http.StatusOK && measured {
				w.ops++
			}
		}
	})
	ops, rec := totals(ws)
	r := s.result("d", dr.cpu.server)
	r.fill(ops, b.cfg.duration, rec)
	r.note("ops are renewals; each client renews its %d leases round-robin", renewNodes)
	cpuNote(r, dr.cpu)
	storeNote(r, dr.store, ops)
	return []*result{r}, s.close()
}
