package tenancy

import (
	"context"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// TestResolverAgreesWithAuthenticate: the tenant a Resolver reads from a
// header is the one Authenticate finds, and what Authenticate refuses for
// its form the Resolver refuses with the same reason.
func TestResolverAgreesWithAuthenticate(t *testing.T) {
	cfg := Config{JWTSecrets: []string{"resolver-secret-0123456789abcdef"}, HeadTokens: []string{"head-token"}}
	b := setup(t, cfg)
	r, err := NewResolver(cfg, b.clk)
	require.NoError(t, err)

	good := sign(t, jwt.SigningMethodHS256, []byte(cfg.JWTSecrets[0]), "", b.claims())
	admin, err := b.svc.Authenticate(context.Background(), bearer(good))
	require.NoError(t, err)
	key, err := b.svc.CreateKey(context.Background(), &Principal{Tenant: admin.Tenant, Subject: "root", Role: RoleAdmin}, "ci", nil, "")
	require.NoError(t, err)
	for _, header := range []string{bearer(good), bearer("head-token"), bearer(key.Token)} {
		p, err := b.svc.Authenticate(context.Background(), header)
		require.NoError(t, err)
		got, err := r.Tenant(header)
		require.NoError(t, err)
		require.Equal(t, p.Tenant, got)
	}

	expired := b.claims()
	expired["exp"] = testStart.Add(-1).Unix()
	for header, reason := range map[string]string{
		"":                           "missing Authorization header",
		"Basic abc":                  `Authorization header must be "Bearer <token>"`,
		bearer("tether.acme.nope.x"): "malformed API key",
		bearer(sign(t, jwt.SigningMethodHS256, []byte("another secret, long enough to sign"), "", b.claims())): "invalid token signature",
		bearer(sign(t, jwt.SigningMethodHS256, []byte(cfg.JWTSecrets[0]), "", expired)):                        "token expired",
	} {
		_, err := r.Tenant(header)
		requireUnauthorized(t, err, reason)
		_, err = b.svc.Authenticate(context.Background(), header)
		requireUnauthorized(t, err, reason)
	}
}
