package graph

import (
	"context"
	"sync"
)

// Fairness between tenants. The writer serves requests in arrival order, so a
// tenant with hundreds of concurrent clients could fill its queue and make
// every other tenant wait behind its flood. Each tenant may have at most
// Options.TenantInflight writes queued or running at once; the rest wait at
// that tenant's own gate, so another tenant's request is never behind more
// than TenantInflight of anyone else's.

type tenantCtxKey struct{}

// WithTenant marks ctx as acting for tenant, so the store can keep tenants
// fair. Server-wide work (the reaper) carries no tenant and is not gated.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantCtxKey{}, tenant)
}

func tenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantCtxKey{}).(string)
	return t
}

// gates hands out one semaphore per tenant.
type gates struct {
	size int
	mu   sync.Mutex
	m    map[string]chan struct{}
}

func (g *gates) of(tenant string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]chan struct{}{}
	}
	c, ok := g.m[tenant]
	if !ok {
		c = make(chan struct{}, g.size)
		g.m[tenant] = c
	}
	return c
}
