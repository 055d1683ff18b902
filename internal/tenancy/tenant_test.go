package tenancy

import (
	"context"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/graphstore"
)

func TestFirstTokenCreatesTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()
	c := b.claims()
	c["tid"] = "newco"
	tok := bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c))

	require.False(t, tenantRecordExists(t, b.store, "newco"))
	// A new tenant costs a write, which a canceled request cannot make.
	_, err := b.svc.Authenticate(canceledContext(), tok)
	require.ErrorIs(t, err, context.Canceled)

	_, err = b.svc.Authenticate(ctx, tok)
	require.NoError(t, err)
	var rec tenantRecord
	require.NoError(t, b.store.View(func(tx *graphstore.Tx) error {
		found, err := tx.Records().TenantGet("newco", &rec)
		require.True(t, found)
		return err
	}))
	require.Equal(t, "newco", rec.ID)
	require.Equal(t, testStart, rec.CreatedAt)

	// Known tenants do no write: a canceled context does not matter.
	_, err = b.svc.Authenticate(canceledContext(), tok)
	require.NoError(t, err)
	// Nor after a restart, where the record is read once.
	_, err = b.restart(t, b.cfg).Authenticate(canceledContext(), tok)
	require.NoError(t, err)

	// A failed authentication never creates a tenant.
	c["tid"] = "ghost"
	_, err = b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte("wrong-secret-0123456789abcdef012345"), "", c)))
	require.Error(t, err)
	require.False(t, tenantRecordExists(t, b.store, "ghost"))
}

func TestValidTenant(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"a", "0", "acme", "a-b_c", "default", "a23456789012345678901234567890123456789012345678901234567890123"} {
		require.True(t, validTenant(id), id)
	}
	for _, id := range []string{"", "-a", "_a", "A", "a.b", "a/b", "a b", "é", "a23456789012345678901234567890123456789012345678901234567890123x"} {
		require.False(t, validTenant(id), id)
	}
}
