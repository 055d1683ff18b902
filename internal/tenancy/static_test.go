package tenancy

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStaticTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{
		HeadTokens:      []string{"head-token-1", "head-token-2", ""},
		LeftClawTokens:  []string{"left-token"},
		RightClawTokens: []string{"right-token"},
	})
	ctx := context.Background()
	require.False(t, tenantRecordExists(t, b.store, "default"))

	for _, tc := range []struct {
		token string
		want  Principal
	}{
		{"head-token-1", Principal{Tenant: "default", Subject: "head", Roles: []string{"dispatcher"}, Role: RoleDispatcher, Via: ViaStatic}},
		{"head-token-2", Principal{Tenant: "default", Subject: "head", Roles: []string{"dispatcher"}, Role: RoleDispatcher, Via: ViaStatic}},
		{"left-token", Principal{Tenant: "default", Subject: "left_claw", Roles: []string{"worker"}, Role: RoleWorker, Via: ViaStatic}},
		{"right-token", Principal{Tenant: "default", Subject: "right_claw", Roles: []string{"worker"}, Role: RoleWorker, Via: ViaStatic}},
	} {
		p, err := b.svc.Authenticate(ctx, bearer(tc.token))
		require.NoError(t, err, tc.token)
		require.Equal(t, tc.want, *p)
	}
	require.True(t, tenantRecordExists(t, b.store, "default"))

	// A prefix or an extension of a token is not the token; with no JWT
	// keys configured it is then an unacceptable JWT.
	for _, tok := range []string{"head-token", "head-token-10", "xleft-token"} {
		_, err := b.svc.Authenticate(ctx, bearer(tok))
		require.Error(t, err, tok)
	}
}

// TestLegacySeedSubjects pins the compatibility layer: which configured
// list authenticates as whom, with which role.
func TestLegacySeedSubjects(t *testing.T) {
	t.Parallel()
	cfg := Config{HeadTokens: []string{"h"}, LeftClawTokens: []string{"l"}, RightClawTokens: []string{"r"}}
	require.Equal(t, []seedSubject{
		{subject: "head", role: RoleDispatcher, tokens: []string{"h"}},
		{subject: "left_claw", role: RoleWorker, tokens: []string{"l"}},
		{subject: "right_claw", role: RoleWorker, tokens: []string{"r"}},
	}, legacySeedSubjects(cfg))
}

func TestStaticTokenForTwoIdentitiesIsAnError(t *testing.T) {
	t.Parallel()
	store := setup(t, Config{}).store
	_, err := NewService(Config{HeadTokens: []string{"same"}, RightClawTokens: []string{"same"}}, store, nil)
	require.Error(t, err)
	// The same token twice for one identity is harmless.
	_, err = NewService(Config{HeadTokens: []string{"same", "same"}}, store, nil)
	require.NoError(t, err)
}

func TestHasCredentials(t *testing.T) {
	t.Parallel()
	require.False(t, Config{}.HasCredentials())
	require.False(t, Config{JWTSecrets: []string{""}, HeadTokens: []string{""}}.HasCredentials())
	require.True(t, Config{JWTSecrets: []string{"s"}}.HasCredentials())
	require.True(t, Config{PublicKeys: []PublicKey{{KID: "k", Path: "/k.pem"}}}.HasCredentials())
	require.True(t, Config{HeadTokens: []string{"h"}}.HasCredentials())
	require.True(t, Config{LeftClawTokens: []string{"l"}}.HasCredentials())
	require.True(t, Config{RightClawTokens: []string{"r"}}.HasCredentials())
}

func TestRoles(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"reader", "worker", "dispatcher", "admin"} {
		r, ok := ParseRole(name)
		require.True(t, ok)
		require.Equal(t, name, r.String())
	}
	_, ok := ParseRole("root")
	require.False(t, ok)
	_, ok = ParseRole("")
	require.False(t, ok)
	require.Equal(t, "Role(0)", Role(0).String())
	require.Less(t, RoleReader, RoleWorker)
	require.Less(t, RoleWorker, RoleDispatcher)
	require.Less(t, RoleDispatcher, RoleAdmin)

	p := &Principal{Role: RoleDispatcher}
	require.True(t, p.Allows(RoleReader))
	require.True(t, p.Allows(RoleWorker))
	require.True(t, p.Allows(RoleDispatcher))
	require.False(t, p.Allows(RoleAdmin))
	require.False(t, p.Allows(Role(0)))
	require.False(t, (*Principal)(nil).Allows(RoleReader))
	require.False(t, (&Principal{}).Allows(RoleReader))
}
