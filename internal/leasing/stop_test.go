package leasing

import (
	"sync"
	"testing"
)

// Stop may be called from several goroutines at once (a signal handler and
// a deferred close, say): each returns once the reaper has stopped, and none
// closes its channel twice.
func TestStopFromManyGoroutines(t *testing.T) {
	b := setup(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.svc.Stop()
		}()
	}
	wg.Wait()
	select {
	case <-b.svc.Stopped():
	default:
		t.Fatal("Stop returned before the reaper stopped")
	}
}
