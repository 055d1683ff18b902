package tenancy

import (
	"context"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/graphstore"
)

// The prefixes the API gives meaning to, and the subjects that use them.
var reservedSubjects = map[string]string{
	"node:":     "node:n1",
	"identity:": "identity:alice",
	"schedule:": "schedule:nightly",
}

// A token whose sub starts with a reserved prefix is refused, and the
// reason names the prefix; the same sub with the prefix elsewhere passes.
func TestJWTRefusesReservedSubjects(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()
	for prefix, sub := range reservedSubjects {
		c := b.claims()
		c["sub"] = sub
		_, err := b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)))
		requireUnauthorized(t, err, "token sub "+graphstore.SubjectProblem(sub))
		require.Contains(t, err.Error(), `"`+prefix+`"`)
	}
	c := b.claims()
	c["sub"] = "svc:node:n1"
	p, err := b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)))
	require.NoError(t, err)
	require.Equal(t, "svc:node:n1", p.Subject)
}

// An API key cannot be made for a subject that starts with a reserved
// prefix (the reason names it, and no key is stored), and a key stored for
// one before the prefix was reserved authenticates no more.
func TestAPIKeysRefuseReservedSubjects(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	for prefix, sub := range reservedSubjects {
		_, err := b.svc.CreateKey(ctx, admin("acme"), sub, nil, "")
		inv := requireInvalid(t, err, "sub")
		require.Contains(t, inv.Reason, `"`+prefix+`"`)
	}
	keys, _, err := b.svc.ListKeys(ctx, "acme", "", 0)
	require.NoError(t, err)
	require.Empty(t, keys)

	// An older server made a key for "node:n1": rewrite a key's subject in
	// the store as it would have stored it.
	k, err := b.svc.CreateKey(ctx, admin("acme"), "bot", nil, "")
	require.NoError(t, err)
	require.NoError(t, b.store.Update(ctx, func(tx *graphstore.Tx) error {
		var rec apiKeyRecord
		found, err := tx.Records().APIKeyGet("acme", k.ID, &rec)
		require.True(t, found)
		if err != nil {
			return err
		}
		rec.Subject = "node:n1"
		return tx.Records().APIKeyPut("acme", k.ID, &rec)
	}))
	_, err = b.svc.Authenticate(ctx, bearer(k.Token))
	requireUnauthorized(t, err, "API key sub "+graphstore.SubjectProblem("node:n1"))
}
