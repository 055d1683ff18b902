package tenant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/tenancy"
)

// ErrUnauthorized is matched (errors.Is) by a credential VerifyKey refuses.
var ErrUnauthorized = errors.New("unauthorized")

// Policy is a tenant's effective policy.
type Policy struct {
	// ClaimTTLDefault is the TTL of a claim that asks for none; a claim
	// asking for more than ClaimTTLMax gets ClaimTTLMax.
	ClaimTTLDefault time.Duration
	ClaimTTLMax     time.Duration
	// MaxAttempts is the max attempts of a node created without one.
	MaxAttempts int64
	// MaxLeasesPerWorker caps the live leases one worker holds (0: no cap).
	MaxLeasesPerWorker int64
	// Retention is how long finished nodes are kept after they last
	// changed (0: forever).
	Retention time.Duration
	// RetryInitial and RetryMax are the backoff of a failed run of a node
	// created without one (RetryInitial 0: retried at once).
	RetryInitial, RetryMax time.Duration
}

// PolicyPatch changes some fields of a tenant's policy: a nil field is left
// as it is; Reset puts the named fields back to the defaults.
type PolicyPatch struct {
	ClaimTTLDefault    *time.Duration
	ClaimTTLMax        *time.Duration
	MaxAttempts        *int64
	MaxLeasesPerWorker *int64
	Retention          *time.Duration
	RetryInitial       *time.Duration
	RetryMax           *time.Duration
	// Reset lists fields back to their defaults, by the names above.
	Reset []string
}

// Role is what a credential may do; each includes the ones before it.
type Role string

// The roles, weakest first.
const (
	RoleReader     Role = "reader"
	RoleWorker     Role = "worker"
	RoleDispatcher Role = "dispatcher"
	RoleAdmin      Role = "admin"
)

// Key is an API key. Token, the credential itself
// (tether.<tenant>.<id>.<secret>), is set only by CreateKey.
type Key struct {
	ID        string
	Tenant    string
	Worker    string // the identity it authenticates as
	Role      Role
	Name      string
	CreatedAt time.Time
	Token     string
}

// Principal is who a verified credential stands for.
type Principal struct {
	Tenant string
	Worker string
	Role   Role
}

// Tenants manages the tenants of an open store.
type Tenants struct {
	svc *tenancy.Service
	// by is the identity recorded as the creator of keys.
	by string
}

// New wraps the tenant service of an open store. It is for package lease,
// which opens one; a program gets its Tenants from lease.Store.Tenants.
func New(svc *tenancy.Service, by string) *Tenants { return &Tenants{svc: svc, by: by} }

// Policy returns tenant's effective policy.
func (t *Tenants) Policy(ctx context.Context, tenant string) (Policy, error) {
	if err := check(tenant); err != nil {
		return Policy{}, err
	}
	p, err := t.svc.Policy(ctx, tenant)
	return policyOf(p), translate(err)
}

// SetPolicy applies patch to tenant's policy and returns the result.
func (t *Tenants) SetPolicy(ctx context.Context, tenant string, patch PolicyPatch) (Policy, error) {
	if err := check(tenant); err != nil {
		return Policy{}, err
	}
	var pp tenancy.PolicyPatch
	ms := func(d *time.Duration, c *tenancy.Change[int64]) {
		if d != nil {
			v := d.Milliseconds()
			*c = tenancy.Change[int64]{Set: true, Value: &v}
		}
	}
	n := func(v *int64, c *tenancy.Change[int64]) {
		if v != nil {
			*c = tenancy.Change[int64]{Set: true, Value: v}
		}
	}
	ms(patch.ClaimTTLDefault, &pp.ClaimTTLDefaultMS)
	ms(patch.ClaimTTLMax, &pp.ClaimTTLMaxMS)
	n(patch.MaxAttempts, &pp.MaxAttemptsDefault)
	n(patch.MaxLeasesPerWorker, &pp.MaxLeasesPerIdentity)
	ms(patch.Retention, &pp.RetentionMS)
	ms(patch.RetryInitial, &pp.RetryInitialMS)
	ms(patch.RetryMax, &pp.RetryMaxMS)
	for _, f := range patch.Reset {
		reset := map[string]*tenancy.Change[int64]{
			"ClaimTTLDefault": &pp.ClaimTTLDefaultMS, "ClaimTTLMax": &pp.ClaimTTLMaxMS,
			"MaxAttempts": &pp.MaxAttemptsDefault, "MaxLeasesPerWorker": &pp.MaxLeasesPerIdentity,
			"Retention": &pp.RetentionMS, "RetryInitial": &pp.RetryInitialMS, "RetryMax": &pp.RetryMaxMS,
		}[f]
		if reset == nil {
			return Policy{}, fmt.Errorf("%w: Reset: no policy field %q", graph.ErrInvalid, f)
		}
		*reset = tenancy.Change[int64]{Set: true}
	}
	p, err := t.svc.PatchPolicy(ctx, tenant, pp)
	return policyOf(p), translate(err)
}

// CreateKey makes an API key of tenant that authenticates as worker with
// role, named name (may be empty). Its Token is shown only here.
func (t *Tenants) CreateKey(ctx context.Context, tenant, worker string, role Role, name string) (Key, error) {
	if err := check(tenant); err != nil {
		return Key{}, err
	}
	admin := &tenancy.Principal{Tenant: tenant, Subject: t.by, Roles: []string{string(RoleAdmin)}, Role: tenancy.RoleAdmin}
	k, err := t.svc.CreateKey(ctx, admin, worker, []string{string(role)}, name)
	if err != nil {
		return Key{}, translate(err)
	}
	out := keyOf(tenant, k.APIKey)
	out.Token = k.Token
	return out, nil
}

// VerifyKey checks an API key token and returns who it stands for, or an
// error matching ErrUnauthorized.
func (t *Tenants) VerifyKey(ctx context.Context, token string) (Principal, error) {
	p, err := t.svc.Authenticate(ctx, "Bearer "+token)
	if err != nil {
		return Principal{}, translate(err)
	}
	return Principal{Tenant: p.Tenant, Worker: p.Subject, Role: Role(p.Role.String())}, nil
}

// Keys lists tenant's API keys (without their tokens).
func (t *Tenants) Keys(ctx context.Context, tenant string) ([]Key, error) {
	if err := check(tenant); err != nil {
		return nil, err
	}
	var out []Key
	after := ""
	for {
		ks, next, err := t.svc.ListKeys(ctx, tenant, after, 100)
		if err != nil {
			return nil, translate(err)
		}
		for _, k := range ks {
			out = append(out, keyOf(tenant, k))
		}
		if next == "" {
			return out, nil
		}
		after = next
	}
}

// DeleteKey deletes tenant's key id; it stops authenticating at once.
func (t *Tenants) DeleteKey(ctx context.Context, tenant, id string) error {
	if err := check(tenant); err != nil {
		return err
	}
	return translate(t.svc.DeleteKey(ctx, tenant, id))
}

func keyOf(tenant string, k tenancy.APIKey) Key {
	role := RoleWorker
	if len(k.Roles) > 0 {
		role = Role(k.Roles[len(k.Roles)-1]) // normalised weakest first
	}
	return Key{ID: k.ID, Tenant: tenant, Worker: k.Subject, Role: role, Name: k.Name, CreatedAt: k.CreatedAt}
}

func policyOf(p tenancy.Policy) Policy {
	ms := func(v int64) time.Duration { return time.Duration(max(v, 0)) * time.Millisecond }
	return Policy{
		ClaimTTLDefault: ms(p.ClaimTTLDefaultMS), ClaimTTLMax: ms(p.ClaimTTLMaxMS),
		MaxAttempts: p.MaxAttemptsDefault, MaxLeasesPerWorker: p.MaxLeasesPerIdentity,
		Retention: ms(p.RetentionMS), RetryInitial: ms(p.RetryInitialMS), RetryMax: ms(p.RetryMaxMS),
	}
}

// check refuses a tenant id no credential could name.
func check(tenant string) error {
	if !tenancy.ValidTenant(tenant) {
		return fmt.Errorf("%w: tenant %q must match ^[a-z0-9][a-z0-9_-]{0,62}$", graph.ErrInvalid, tenant)
	}
	return nil
}

func translate(err error) error {
	var inv *fault.Invalid
	var un *fault.Unauthorized
	var nf *fault.NotFound
	switch {
	case err == nil:
		return nil
	case errors.As(err, &inv):
		return fmt.Errorf("%w: %s", graph.ErrInvalid, inv)
	case errors.As(err, &un):
		return fmt.Errorf("%w: %s", ErrUnauthorized, un)
	case errors.As(err, &nf):
		return fmt.Errorf("%w: %s", graph.ErrNotFound, nf)
	}
	return err
}
