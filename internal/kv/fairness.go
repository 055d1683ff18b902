package kv

import (
	"context"
	"sync"
)

// Fairness between tenants. The writer serves requests in arrival order, so a
// tenant with hundreds of concurrent clients could fill its queue and make
// every other tenant wait behind its flood. Each fairness key (a tenant) may
// have at most Options.KeyInflight writes queued or running at once; the rest
// wait at that key's own gate, so another tenant's request is never behind
// more than KeyInflight of anyone else's.

type fairnessCtxKey struct{}

// WithFairnessKey marks ctx as acting for key (a tenant), so the store can
// keep keys fair. Server-wide work (the reaper) carries none and is not gated.
func WithFairnessKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, fairnessCtxKey{}, key)
}

// FairnessKey returns the key ctx acts for ("" for none).
func FairnessKey(ctx context.Context) string {
	t, _ := ctx.Value(fairnessCtxKey{}).(string)
	return t
}

// gates hands out one semaphore per fairness key.
type gates struct {
	size int
	mu   sync.Mutex
	m    map[string]chan struct{}
}

func (g *gates) of(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]chan struct{}{}
	}
	c, ok := g.m[key]
	if !ok {
		c = make(chan struct{}, g.size)
		g.m[key] = c
	}
	return c
}
