package tenancy

import (
	"crypto/sha256"
	"sync"
	"time"
)

// defaultTokenCacheSize bounds the verified JWTs remembered: far more than
// the distinct tokens a server sees within their lifetimes, and at about
// 100 bytes an entry, under a megabyte.
const defaultTokenCacheSize = 8192

// tokenCache remembers the principal of each JWT that passed verification,
// until the token's exp, so that a token presented again costs a map lookup
// instead of an HMAC or signature check and two JSON decodes.
//
// Entries are keyed by the SHA-256 of the whole token, so the cache holds no
// bearer secret and two different tokens never share an entry. Only successes
// are stored; a token that fails is verified afresh every time (one that is
// not valid yet may become valid). A cache belongs to one jwtVerifier, that
// is to one set of keys, issuer and audience: settings are read once, so a
// changed key set means a new Service and an empty cache, and a token signed
// by a removed key stops working at once.
type tokenCache struct {
	max     int
	mu      sync.RWMutex
	entries map[[sha256.Size]byte]cachedToken
}

type cachedToken struct {
	p   *Principal
	exp time.Time
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, entries: make(map[[sha256.Size]byte]cachedToken)}
}

// get returns the principal of the token whose hash is sum, unless it is
// unknown or expired at now. An expired token is expired exactly when the
// verifier would say so: at exp and after.
func (c *tokenCache) get(sum [sha256.Size]byte, now time.Time) (*Principal, bool) {
	c.mu.RLock()
	e, ok := c.entries[sum]
	c.mu.RUnlock()
	if !ok || !now.Before(e.exp) {
		return nil, false
	}
	return e.p, true
}

// put remembers a verified token's principal until exp. When the cache is
// full it first drops the expired entries and then, if none was, an eighth
// of the entries chosen at random (Go's map order), so that the cost of
// making room is spread over many insertions.
func (c *tokenCache) put(sum [sha256.Size]byte, p *Principal, exp, now time.Time) {
	if c.max <= 0 || !now.Before(exp) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[sum]; !ok && len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.exp) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			for k := range c.entries {
				if len(c.entries) < c.max-c.max/8 {
					break
				}
				delete(c.entries, k)
			}
		}
	}
	c.entries[sum] = cachedToken{p: p, exp: exp}
}

// len is the number of entries, expired ones included.
func (c *tokenCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
