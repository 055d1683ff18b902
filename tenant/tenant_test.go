package tenant_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/lease"
	"github.com/tether-run/tether/tenant"
)

func setup(t *testing.T) *lease.Store {
	t.Helper()
	s, err := lease.Open(t.TempDir(), lease.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestPolicyPatchAndReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ten := setup(t).Tenants()
	def, err := ten.Policy(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, def.ClaimTTLDefault)
	require.EqualValues(t, 5, def.MaxAttempts)

	three := int64(3)
	p, err := ten.SetPolicy(ctx, "acme", tenant.PolicyPatch{MaxAttempts: &three})
	require.NoError(t, err)
	require.EqualValues(t, 3, p.MaxAttempts)
	other, err := ten.Policy(ctx, "other")
	require.NoError(t, err)
	require.Equal(t, def, other, "one tenant's policy is not another's")

	p, err = ten.SetPolicy(ctx, "acme", tenant.PolicyPatch{Reset: []string{"MaxAttempts"}})
	require.NoError(t, err)
	require.Equal(t, def, p)

	tooLong := 3 * time.Hour
	_, err = ten.SetPolicy(ctx, "acme", tenant.PolicyPatch{ClaimTTLDefault: &tooLong})
	require.ErrorIs(t, err, graph.ErrInvalid, "the default above the max")
	_, err = ten.SetPolicy(ctx, "acme", tenant.PolicyPatch{Reset: []string{"Nope"}})
	require.ErrorIs(t, err, graph.ErrInvalid)
	_, err = ten.Policy(ctx, "")
	require.ErrorIs(t, err, graph.ErrInvalid)
}

func TestMaxAttemptsAppliesToNewNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	one := int64(1)
	_, err := s.Tenants().SetPolicy(ctx, "acme", tenant.PolicyPatch{MaxAttempts: &one})
	require.NoError(t, err)
	n, err := s.Create(ctx, "acme", graph.NodeSpec{Type: "task", Queue: "q"})
	require.NoError(t, err)
	require.EqualValues(t, 1, n.MaxAttempts)
	l, err := s.ClaimNext(ctx, lease.ClaimNextParams{Tenant: "acme", Queue: "q", Worker: "alice"})
	require.NoError(t, err)
	require.NoError(t, s.Fail(ctx, l, lease.FailParams{Error: "boom"}))
	n, err = s.Graph().Node(ctx, "acme", n.ID)
	require.NoError(t, err)
	require.Equal(t, graph.StatusDead, n.Status)
	require.Equal(t, "boom", n.Error)
}

func TestKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ten := setup(t).Tenants()
	k, err := ten.CreateKey(ctx, "acme", "bot", tenant.RoleDispatcher, "deploys")
	require.NoError(t, err)
	require.NotEmpty(t, k.Token)
	who, err := ten.VerifyKey(ctx, k.Token)
	require.NoError(t, err)
	require.Equal(t, tenant.Principal{Tenant: "acme", Worker: "bot", Role: tenant.RoleDispatcher}, who)

	keys, err := ten.Keys(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Equal(t, k.ID, keys[0].ID)
	require.Empty(t, keys[0].Token, "the secret is shown once")
	others, err := ten.Keys(ctx, "other")
	require.NoError(t, err)
	require.Empty(t, others)

	require.NoError(t, ten.DeleteKey(ctx, "acme", k.ID))
	_, err = ten.VerifyKey(ctx, k.Token)
	require.ErrorIs(t, err, tenant.ErrUnauthorized)
	_, err = ten.VerifyKey(ctx, "tether.acme.nope.nope")
	require.ErrorIs(t, err, tenant.ErrUnauthorized)
}
