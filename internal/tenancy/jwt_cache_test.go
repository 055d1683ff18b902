package tenancy

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

func TestJWTCacheStopsAtExp(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()

	c := b.claims()
	exp := b.clk.Now().Add(time.Minute).Truncate(time.Second)
	c["exp"] = exp.Unix()
	tok := sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)
	first, err := b.svc.Authenticate(ctx, bearer(tok))
	require.NoError(t, err)
	require.Equal(t, 1, b.svc.jwt.cache.len())

	// Until exp the cached principal answers, and it is the same one.
	b.clk.Advance(exp.Sub(b.clk.Now()) - time.Millisecond)
	again, err := b.svc.Authenticate(ctx, bearer(tok))
	require.NoError(t, err)
	require.Same(t, first, again)

	// At exp the token is refused exactly as an uncached one would be.
	b.clk.Advance(time.Millisecond)
	_, err = b.svc.Authenticate(ctx, bearer(tok))
	requireUnauthorized(t, err, "token expired")
	_, err = b.svc.Authenticate(ctx, bearer(tok))
	requireUnauthorized(t, err, "token expired")
}

func TestJWTCacheKeepsNoFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()

	forged := sign(t, jwt.SigningMethodHS256, []byte("some-other-secret-0123456789abcdef"), "", b.claims())
	unknownRole := b.claims()
	unknownRole["roles"] = []string{"owner"}
	for range 2 {
		_, err := b.svc.Authenticate(ctx, bearer(forged))
		requireUnauthorized(t, err, "invalid token signature")
		_, err = b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", unknownRole)))
		requireUnauthorized(t, err, "token names an unknown role")
	}
	require.Zero(t, b.svc.jwt.cache.len())

	// A refusal is not remembered either: a token not valid yet is accepted
	// once its nbf has come.
	c := b.claims()
	c["nbf"] = b.clk.Now().Add(time.Minute).Unix()
	early := sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)
	_, err := b.svc.Authenticate(ctx, bearer(early))
	requireUnauthorized(t, err, "token not valid yet")
	b.clk.Advance(time.Minute)
	_, err = b.svc.Authenticate(ctx, bearer(early))
	require.NoError(t, err)
}

// A removed key must stop working. Keys are read once, when the service is
// made, so a new key set is a new service with a cache of its own: a token
// the old service had cached is verified afresh, and refused.
func TestJWTCacheRemovedSecretStopsWorking(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew, secretOld}})
	ctx := context.Background()

	oldTok := sign(t, jwt.SigningMethodHS256, []byte(secretOld), "", b.claims())
	newTok := sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", b.claims())
	for _, tok := range []string{oldTok, newTok} {
		_, err := b.svc.Authenticate(ctx, bearer(tok))
		require.NoError(t, err)
	}
	require.Equal(t, 2, b.svc.jwt.cache.len())

	rotated := b.restart(t, Config{JWTSecrets: []string{secretNew}})
	_, err := rotated.Authenticate(ctx, bearer(oldTok))
	requireUnauthorized(t, err, "invalid token signature")
	_, err = rotated.Authenticate(ctx, bearer(newTok))
	require.NoError(t, err)
}

func TestJWTCacheIsPerToken(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()

	c := b.claims()
	c["roles"] = []string{"admin"}
	admin := sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)
	worker := sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", b.claims())
	for range 2 {
		p, err := b.svc.Authenticate(ctx, bearer(admin))
		require.NoError(t, err)
		require.Equal(t, RoleAdmin, p.Role)
		p, err = b.svc.Authenticate(ctx, bearer(worker))
		require.NoError(t, err)
		require.Equal(t, RoleWorker, p.Role)
	}
	// The same token with its signature changed is another token, and fails.
	tampered := admin[:len(admin)-2] + "AA"
	if tampered == admin {
		tampered = admin[:len(admin)-2] + "BB"
	}
	_, err := b.svc.Authenticate(ctx, bearer(tampered))
	requireUnauthorized(t, err, "invalid token signature")
}

func TestTokenCacheBounded(t *testing.T) {
	t.Parallel()
	now := testStart
	c := newTokenCache(16)
	p := &Principal{Tenant: "acme", Subject: "a", Role: RoleWorker}
	key := func(i int) [sha256.Size]byte { return sha256.Sum256(fmt.Appendf(nil, "token-%d", i)) }

	for i := range 100 {
		c.put(key(i), p, now.Add(time.Hour), now)
		require.LessOrEqual(t, c.len(), 16)
	}
	_, ok := c.get(key(99), now)
	require.True(t, ok, "the last entry put is there")

	// Full of entries that have expired: they go first, live ones stay.
	c = newTokenCache(4)
	c.put(key(0), p, now.Add(time.Hour), now)
	for i := 1; i < 4; i++ {
		c.put(key(i), p, now.Add(time.Second), now)
	}
	later := now.Add(time.Minute)
	c.put(key(4), p, later.Add(time.Hour), later)
	require.Equal(t, 2, c.len())
	for _, i := range []int{0, 4} {
		_, ok := c.get(key(i), later)
		require.True(t, ok, "entry %d", i)
	}

	// Nothing is kept that has already expired.
	c.put(key(5), p, later, later)
	_, ok = c.get(key(5), later)
	require.False(t, ok)
	require.Equal(t, 2, c.len())
}

func TestJWTCacheConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()
	toks := make([]string, 8)
	for i := range toks {
		c := b.claims()
		c["sub"] = fmt.Sprintf("agent-%d", i)
		toks[i] = sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				tok := toks[(g+i)%len(toks)]
				p, err := b.svc.Authenticate(ctx, bearer(tok))
				if !assertNoError(t, err) {
					return
				}
				if want := fmt.Sprintf("agent-%d", (g+i)%len(toks)); p.Subject != want {
					t.Errorf("subject %q, want %q", p.Subject, want)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, len(toks), b.svc.jwt.cache.len())
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}
