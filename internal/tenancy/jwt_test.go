package tenancy

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

const (
	secretOld = "old-secret-0123456789abcdef0123456789"
	secretNew = "new-secret-0123456789abcdef0123456789"
)

func TestJWTHS256SecretRotation(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew, secretOld}})
	ctx := context.Background()

	for _, secret := range []string{secretOld, secretNew} {
		p, err := b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secret), "", b.claims())))
		require.NoError(t, err)
		require.Equal(t, &Principal{Tenant: "acme", Subject: "agent-1", Roles: []string{"worker"}, Role: RoleWorker, Via: ViaJWT}, p)
	}

	_, err := b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte("some-other-secret-0123456789abcdef"), "", b.claims())))
	requireUnauthorized(t, err, "invalid token signature")
}

func TestJWTRejectsOtherAlgorithms(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()

	none := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", b.claims())
	_, err := b.svc.Authenticate(ctx, bearer(none))
	requireUnauthorized(t, err, "unsigned tokens are not accepted")

	// "none" with a signature made by a real secret is still "none".
	valid := sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", b.claims())
	parts := strings.Split(valid, ".")
	forged := jwtSegment(t, `{"alg":"NONE","typ":"JWT"}`) + "." + parts[1] + "." + parts[2]
	_, err = b.svc.Authenticate(ctx, bearer(forged))
	requireUnauthorized(t, err, "unsigned tokens are not accepted")

	hs512 := sign(t, jwt.SigningMethodHS512, []byte(secretNew), "", b.claims())
	_, err = b.svc.Authenticate(ctx, bearer(hs512))
	requireUnauthorized(t, err, "token signing algorithm not accepted")

	// An RS256 token with no public keys configured.
	rs := sign(t, jwt.SigningMethodRS256, keys(t).rsa, "", b.claims())
	_, err = b.svc.Authenticate(ctx, bearer(rs))
	requireUnauthorized(t, err, "token signing algorithm not accepted")
}

func jwtSegment(t *testing.T, s string) string {
	t.Helper()
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func TestJWTPublicKeys(t *testing.T) {
	t.Parallel()
	k := keys(t)
	dir := t.TempDir()
	rsaPath := writePEM(t, dir, "rsa.pem", &k.rsa.PublicKey)
	pkcs1Path := writeBlock(t, dir, "rsa1.pem", &pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey)})
	cfg := Config{
		JWTSecrets: []string{secretNew},
		PublicKeys: []PublicKey{
			{KID: "rsa", Path: rsaPath},
			{KID: "rsa-pkcs1", Path: pkcs1Path},
			{KID: "ec", Path: writePEM(t, dir, "ec.pem", &k.ec256.PublicKey)},
			{KID: "ec384", Path: writePEM(t, dir, "ec384.pem", &k.ec384.PublicKey)},
			{KID: "ed-a", Path: writePEM(t, dir, "ed-a.pem", k.edA.Public())},
			{KID: "ed-b", Path: writePEM(t, dir, "ed-b.pem", k.edB.Public())},
		},
	}
	b := setup(t, cfg)
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		method jwt.SigningMethod
		key    any
		kid    string
	}{
		{"RS256", jwt.SigningMethodRS256, k.rsa, "rsa"},
		{"RS256 PKCS#1 file", jwt.SigningMethodRS256, k.rsa, "rsa-pkcs1"},
		{"ES256", jwt.SigningMethodES256, k.ec256, "ec"},
		{"ES384", jwt.SigningMethodES384, k.ec384, "ec384"},
		{"EdDSA a", jwt.SigningMethodEdDSA, k.edA, "ed-a"},
		{"EdDSA b", jwt.SigningMethodEdDSA, k.edB, "ed-b"},
		{"HS256 without kid", jwt.SigningMethodHS256, []byte(secretNew), ""},
	} {
		p, err := b.svc.Authenticate(ctx, bearer(sign(t, tc.method, tc.key, tc.kid, b.claims())))
		require.NoError(t, err, tc.name)
		require.Equal(t, "agent-1", p.Subject, tc.name)
		require.Equal(t, ViaJWT, p.Via, tc.name)
	}

	for _, tc := range []struct {
		name   string
		method jwt.SigningMethod
		key    any
		kid    string
		reason string
	}{
		// The kid picks the key: another key of the same type does not verify.
		{"ed a under kid b", jwt.SigningMethodEdDSA, k.edA, "ed-b", "invalid token signature"},
		// The kid pins the algorithm.
		{"ES256 under an RSA kid", jwt.SigningMethodES256, k.ec256, "rsa", "token algorithm does not match its key"},
		{"RS256 under an EC kid", jwt.SigningMethodRS256, k.rsa, "ec", "token algorithm does not match its key"},
		{"PS256 under an RSA kid", jwt.SigningMethodPS256, k.rsa, "rsa", "token algorithm does not match its key"},
		{"ES384 under a P-256 kid", jwt.SigningMethodES384, k.ec384, "ec", "token algorithm does not match its key"},
		{"unknown kid", jwt.SigningMethodRS256, k.rsa, "nope", "unknown token key id"},
		{"public-key token without kid", jwt.SigningMethodRS256, k.rsa, "", "token has no key id"},
	} {
		_, err := b.svc.Authenticate(ctx, bearer(sign(t, tc.method, tc.key, tc.kid, b.claims())))
		requireUnauthorized(t, err, tc.reason)
	}
}

// The classic confusion: an attacker MACs a token with the server's public
// key as the HMAC secret and names the RSA kid.
func TestJWTAlgorithmConfusion(t *testing.T) {
	t.Parallel()
	k := keys(t)
	dir := t.TempDir()
	rsaPath := writePEM(t, dir, "rsa.pem", &k.rsa.PublicKey)
	pemBytes, err := os.ReadFile(rsaPath)
	require.NoError(t, err)
	// Even a server that also has HS256 secrets configured.
	b := setup(t, Config{JWTSecrets: []string{secretNew}, PublicKeys: []PublicKey{{KID: "rsa", Path: rsaPath}}})

	forged := sign(t, jwt.SigningMethodHS256, pemBytes, "rsa", b.claims())
	_, err = b.svc.Authenticate(context.Background(), bearer(forged))
	requireUnauthorized(t, err, "token algorithm does not match its key")

	// Without the kid it goes to the secrets, which it does not match.
	forged = sign(t, jwt.SigningMethodHS256, pemBytes, "", b.claims())
	_, err = b.svc.Authenticate(context.Background(), bearer(forged))
	requireUnauthorized(t, err, "invalid token signature")
}

func TestJWTHS256WithUnknownKidUsesSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	_, err := b.svc.Authenticate(context.Background(), bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "hmac-2026", b.claims())))
	require.NoError(t, err)
}

func TestJWTTimeClaims(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()

	c := b.claims()
	c["exp"] = b.clk.Now().Add(time.Minute).Unix()
	tok := sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)
	_, err := b.svc.Authenticate(ctx, bearer(tok))
	require.NoError(t, err)

	b.clk.Advance(time.Minute)
	_, err = b.svc.Authenticate(ctx, bearer(tok))
	requireUnauthorized(t, err, "token expired")

	c = b.claims()
	c["nbf"] = b.clk.Now().Add(time.Minute).Unix()
	tok = sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)
	_, err = b.svc.Authenticate(ctx, bearer(tok))
	requireUnauthorized(t, err, "token not valid yet")
	b.clk.Advance(time.Minute)
	_, err = b.svc.Authenticate(ctx, bearer(tok))
	require.NoError(t, err)
}

func TestJWTRequiredClaims(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		edit   func(jwt.MapClaims)
		reason string
	}{
		{"no exp", func(c jwt.MapClaims) { delete(c, "exp") }, "token has no exp"},
		{"exp not a number", func(c jwt.MapClaims) { c["exp"] = "tomorrow" }, "malformed token"},
		{"no sub", func(c jwt.MapClaims) { delete(c, "sub") }, "token has no sub"},
		{"empty sub", func(c jwt.MapClaims) { c["sub"] = "" }, "token has no sub"},
		{"sub with a space", func(c jwt.MapClaims) { c["sub"] = "agent 1" }, "token sub is not a valid subject"},
		{"sub with a slash", func(c jwt.MapClaims) { c["sub"] = "a/b" }, "token sub is not a valid subject"},
		{"no tid", func(c jwt.MapClaims) { delete(c, "tid") }, "token has no tid"},
		{"tid upper case", func(c jwt.MapClaims) { c["tid"] = "Acme" }, "token tid is not a valid tenant id"},
		{"tid starts with -", func(c jwt.MapClaims) { c["tid"] = "-acme" }, "token tid is not a valid tenant id"},
		{"tid too long", func(c jwt.MapClaims) { c["tid"] = strings.Repeat("a", 64) }, "token tid is not a valid tenant id"},
		{"tid with a dot", func(c jwt.MapClaims) { c["tid"] = "ac.me" }, "token tid is not a valid tenant id"},
		{"tid not a string", func(c jwt.MapClaims) { c["tid"] = 7 }, "malformed token"},
		{"unknown role", func(c jwt.MapClaims) { c["roles"] = []string{"worker", "root"} }, "token names an unknown role"},
		{"empty roles", func(c jwt.MapClaims) { c["roles"] = []string{} }, "token grants no roles"},
		{"roles not an array", func(c jwt.MapClaims) { c["roles"] = "admin" }, "malformed token"},
	} {
		c := b.claims()
		tc.edit(c)
		_, err := b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)))
		requireUnauthorized(t, err, tc.reason)
	}

	// The longest tenant id is fine.
	c := b.claims()
	c["tid"] = "a" + strings.Repeat("-", 62)
	p, err := b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)))
	require.NoError(t, err)
	require.Equal(t, c["tid"], p.Tenant)
}

func TestJWTRoles(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()

	for _, tc := range []struct {
		roles any
		want  []string
		role  Role
	}{
		{nil, []string{"worker"}, RoleWorker},
		{[]string{"reader"}, []string{"reader"}, RoleReader},
		{[]string{"admin", "worker", "admin"}, []string{"worker", "admin"}, RoleAdmin},
		{[]string{"Dispatcher"}, []string{"dispatcher"}, RoleDispatcher},
	} {
		c := b.claims()
		if tc.roles != nil {
			c["roles"] = tc.roles
		}
		p, err := b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)))
		require.NoError(t, err)
		require.Equal(t, tc.want, p.Roles)
		require.Equal(t, tc.role, p.Role)
	}

	c := b.claims()
	c["roles"] = nil // explicit null is absent
	p, err := b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)))
	require.NoError(t, err)
	require.Equal(t, []string{"worker"}, p.Roles)
}

func TestJWTIssuerAudience(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}, Issuer: "https://id.example", Audience: "tether"})
	ctx := context.Background()
	good := func() jwt.MapClaims {
		c := b.claims()
		c["iss"] = "https://id.example"
		c["aud"] = "tether"
		return c
	}

	_, err := b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", good())))
	require.NoError(t, err)
	c := good()
	c["aud"] = []string{"other", "tether"}
	_, err = b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)))
	require.NoError(t, err)

	for _, tc := range []struct {
		edit   func(jwt.MapClaims)
		reason string
	}{
		{func(c jwt.MapClaims) { delete(c, "iss") }, "token has no iss"},
		{func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }, "token issuer not accepted"},
		{func(c jwt.MapClaims) { delete(c, "aud") }, "token has no aud"},
		{func(c jwt.MapClaims) { c["aud"] = "" }, "token has no aud"},
		{func(c jwt.MapClaims) { c["aud"] = []string{"other"} }, "token audience not accepted"},
	} {
		c := good()
		tc.edit(c)
		_, err := b.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)))
		requireUnauthorized(t, err, tc.reason)
	}

	// Unconfigured, iss and aud are not checked.
	b2 := setup(t, Config{JWTSecrets: []string{secretNew}})
	c = b2.claims()
	c["iss"], c["aud"] = "anyone", "anything"
	_, err = b2.svc.Authenticate(ctx, bearer(sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", c)))
	require.NoError(t, err)
}

func TestAuthorizationHeader(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{JWTSecrets: []string{secretNew}})
	ctx := context.Background()
	tok := sign(t, jwt.SigningMethodHS256, []byte(secretNew), "", b.claims())

	for _, h := range []string{"bearer " + tok, "BEARER  " + tok} {
		_, err := b.svc.Authenticate(ctx, h)
		require.NoError(t, err, h)
	}
	for _, tc := range []struct{ header, reason string }{
		{"", "missing Authorization header"},
		{"Basic dXNlcjpwYXNz", `Authorization header must be "Bearer <token>"`},
		{"Bearer", `Authorization header must be "Bearer <token>"`},
		{"Bearer ", "missing bearer token"},
		{"Bearer " + strings.Repeat("a", maxTokenLength+1), "token too long"},
		{"Bearer abc", "malformed token"},
		{"Bearer a.b.c", "malformed token"},
		{"Bearer " + jwtSegment(t, `{"typ":"JWT"}`) + ".e30.", "malformed token"},
	} {
		_, err := b.svc.Authenticate(ctx, tc.header)
		requireUnauthorized(t, err, tc.reason)
	}
}

func TestNewServiceRejectsBadKeys(t *testing.T) {
	t.Parallel()
	k := keys(t)
	dir := t.TempDir()
	store := setup(t, Config{}).store

	small, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	notKey := filepath.Join(dir, "not-a-key.pem")
	require.NoError(t, os.WriteFile(notKey, []byte("hello"), 0o600))
	privDER, err := x509.MarshalPKCS8PrivateKey(k.edA)
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		keys []PublicKey
	}{
		{"missing file", []PublicKey{{KID: "x", Path: dir + "/nope.pem"}}},
		{"not PEM", []PublicKey{{KID: "x", Path: notKey}}},
		{"private key", []PublicKey{{KID: "x", Path: writeBlock(t, dir, "priv.pem", &pem.Block{Type: "PRIVATE KEY", Bytes: privDER})}}},
		{"small RSA", []PublicKey{{KID: "x", Path: writePEM(t, dir, "small.pem", &small.PublicKey)}}},
		{"garbage DER", []PublicKey{{KID: "x", Path: writeBlock(t, dir, "bad.pem", &pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}})}}},
		{"duplicate kid", []PublicKey{{KID: "x", Path: writePEM(t, dir, "a.pem", k.edA.Public())}, {KID: "x", Path: writePEM(t, dir, "b.pem", k.edB.Public())}}},
		{"empty kid", []PublicKey{{KID: "", Path: writePEM(t, dir, "c.pem", k.edA.Public())}}},
	} {
		_, err := NewService(Config{PublicKeys: tc.keys}, store, nil)
		require.Error(t, err, tc.name)
	}
}

func TestParsePublicKeys(t *testing.T) {
	t.Parallel()
	got, err := ParsePublicKeys(" main=/etc/tether/rsa.pem, /keys/backup.key.pem ,, /keys/ed ")
	require.NoError(t, err)
	require.Equal(t, []PublicKey{
		{KID: "main", Path: "/etc/tether/rsa.pem"},
		{KID: "backup.key", Path: "/keys/backup.key.pem"},
		{KID: "ed", Path: "/keys/ed"},
	}, got)

	got, err = ParsePublicKeys("")
	require.NoError(t, err)
	require.Empty(t, got)

	for _, spec := range []string{"=/a.pem", "kid=", "a=/x.pem,a=/y.pem", "/k/a.pem,/other/a.pem"} {
		_, err := ParsePublicKeys(spec)
		require.Error(t, err, spec)
	}
}
