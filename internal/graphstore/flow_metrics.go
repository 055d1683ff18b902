package graphstore

// EachKeyRunning calls fn with every tenant's concurrency keys that hold at
// least one slot, and their counts, for the metrics' running-per-key gauge
// at scrape time: O(keys running), never the claim path. fn runs under the
// flow state's read lock, so it must be quick and must not call the store.
func (s *Store) EachKeyRunning(fn func(tenant, key string, running int64)) {
	s.flow.mu.RLock()
	defer s.flow.mu.RUnlock()
	for k, n := range s.flow.running {
		if n > 0 {
			fn(k.Tenant, k.Key, int64(n))
		}
	}
}
