package graphstore

import (
	"github.com/tether-run/tether/internal/indexes"
)

// CheckLive is Check on an open store: its records against each other, and
// both the derived state it serves and one derived afresh from the same
// records against a recount from them (the served state's problems are
// marked "served state:"). The caller makes sure no write runs meanwhile,
// and that every write answered is durable: the simulation calls it
// between steps, with the store idle.
func (s *Store) CheckLive() (*CheckReport, error) {
	fresh := &Store{kv: s.kv, clock: s.clock, liveRecords: s.liveRecords, table: indexes.NewTable(), blobs: newBlobTable(), ready: indexes.NewReadyMirror(s.clock), events: newEventHub(), flow: newFlowState(), lapses: newLapses()}
	defer fresh.ready.Close()
	stored, err := s.checkFormat("")
	if err != nil {
		return nil, err
	}
	r := &CheckReport{Format: stored.Version}
	return r, fresh.checkRecords(r, s)
}
