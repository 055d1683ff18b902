package tenancy

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

// Tenant is a tenant as GET /v1/tenant shows it.
type Tenant struct {
	ID     string `json:"id"`
	Policy Policy `json:"policy"`
}

func invalidTenant(id string) error {
	return fault.Invalidf("tenant", "%q is not a valid tenant id", truncate(id, 64))
}

// Tenant returns the tenant with its effective policy.
func (s *Service) Tenant(ctx context.Context, tenant string) (Tenant, error) {
	p, err := s.Policy(ctx, tenant)
	if err != nil {
		return Tenant{}, err
	}
	return Tenant{ID: tenant, Policy: p}, nil
}

// Policy returns the tenant's effective policy. It is served from memory once
// known; a tenant with no record yet has the server defaults.
func (s *Service) Policy(ctx context.Context, tenant string) (Policy, error) {
	if v, ok := s.policies.Load(tenant); ok {
		return v.(Policy), nil
	}
	if !validTenant(tenant) {
		return Policy{}, invalidTenant(tenant)
	}
	if err := ctx.Err(); err != nil {
		return Policy{}, err
	}
	var (
		rec   tenantRecord
		found bool
	)
	err := s.store.View(func(tx *graphstore.Tx) (err error) {
		found, err = tx.Records().TenantGet(tenant, &rec)
		return err
	})
	if err != nil {
		return Policy{}, fmt.Errorf("error reading tenant: %w", err)
	}
	if !found {
		return s.defaults, nil
	}
	return s.cachePolicy(tenant, rec.Policy.over(s.defaults)), nil
}

// cachePolicy remembers a policy read outside the writer goroutine. It never
// replaces an entry: one that is there was stored by a commit at least as
// recent as our read.
func (s *Service) cachePolicy(tenant string, p Policy) Policy {
	v, _ := s.policies.LoadOrStore(tenant, p)
	return v.(Policy)
}

// PatchPolicy applies a merge patch to the tenant's policy, validates the
// result and stores it durably; it returns the new effective policy.
func (s *Service) PatchPolicy(ctx context.Context, tenant string, patch PolicyPatch) (Policy, error) {
	if !validTenant(tenant) {
		return Policy{}, invalidTenant(tenant)
	}
	var eff Policy
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		var rec tenantRecord
		found, err := tx.Records().TenantGet(tenant, &rec)
		if err != nil {
			return fmt.Errorf("error reading tenant: %w", err)
		}
		if !found {
			rec = tenantRecord{ID: tenant, CreatedAt: tx.Now().UTC()}
		}
		rec.Policy = rec.Policy.apply(patch)
		p := rec.Policy.over(s.defaults)
		if err := p.validate(s.ceilingMS, patch); err != nil {
			return err
		}
		if err := tx.Records().TenantPut(tenant, &rec); err != nil {
			return fmt.Errorf("error writing tenant: %w", err)
		}
		// Commits run in order on the writer goroutine, so the cache always
		// ends with the last committed policy.
		tx.OnCommit(func() { s.policies.Store(tenant, p) })
		eff = p
		return nil
	})
	if err != nil {
		return Policy{}, err
	}
	return eff, nil
}

// ensureTenant makes sure the tenant has a record. Once a tenant is in the
// cache this is a map lookup; after a restart the first call reads, and only
// a tenant never seen before costs a write.
func (s *Service) ensureTenant(ctx context.Context, tenant string) error {
	if _, ok := s.policies.Load(tenant); ok {
		return nil
	}
	var (
		rec   tenantRecord
		found bool
	)
	err := s.store.View(func(tx *graphstore.Tx) (err error) {
		found, err = tx.Records().TenantGet(tenant, &rec)
		return err
	})
	if err != nil {
		return fmt.Errorf("error reading tenant: %w", err)
	}
	if found {
		s.cachePolicy(tenant, rec.Policy.over(s.defaults))
		return nil
	}
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error {
		var rec tenantRecord
		found, err := tx.Records().TenantGet(tenant, &rec)
		if err != nil {
			return err
		}
		if !found {
			rec = tenantRecord{ID: tenant, CreatedAt: tx.Now().UTC()}
			if err := tx.Records().TenantPut(tenant, &rec); err != nil {
				return err
			}
		}
		p := rec.Policy.over(s.defaults)
		tx.OnCommit(func() { s.policies.Store(tenant, p) })
		return nil
	})
	if err != nil {
		return fmt.Errorf("error creating tenant: %w", err)
	}
	return nil
}
