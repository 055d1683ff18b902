package tenancy

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

var testStart = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

type testBundle struct {
	svc   *Service
	store *graphstore.Store
	clk   *clocktest.Fake
	cfg   Config
}

// setup opens a real Badger store in a temporary directory and a service on
// it with a fake clock.
func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	clk := clocktest.New(testStart)
	store, err := graphstore.Open(graphstore.Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	svc, err := NewService(cfg, store, clk)
	require.NoError(t, err)
	return &testBundle{svc: svc, store: store, clk: clk, cfg: cfg}
}

// restart builds a second service on the same store, as after a restart.
func (b *testBundle) restart(t *testing.T, cfg Config) *Service {
	t.Helper()
	svc, err := NewService(cfg, b.store, b.clk)
	require.NoError(t, err)
	return svc
}

// claims returns valid claims for tenant acme, subject agent-1, expiring in
// an hour of the fake clock.
func (b *testBundle) claims() jwt.MapClaims {
	return jwt.MapClaims{
		"sub": "agent-1",
		"tid": "acme",
		"exp": b.clk.Now().Add(time.Hour).Unix(),
	}
}

func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func bearer(token string) string { return "Bearer " + token }

// requireUnauthorized checks that err is a *fault.Unauthorized with reason.
func requireUnauthorized(t *testing.T, err error, reason string) {
	t.Helper()
	var u *fault.Unauthorized
	require.True(t, errors.As(err, &u), "want *fault.Unauthorized, got %T: %v", err, err)
	require.Equal(t, reason, u.Reason)
}

// requireInvalid checks that err is a *fault.Invalid naming field.
func requireInvalid(t *testing.T, err error, field string) *fault.Invalid {
	t.Helper()
	var inv *fault.Invalid
	require.True(t, errors.As(err, &inv), "want *fault.Invalid, got %T: %v", err, err)
	require.Equal(t, field, inv.Field, "reason: %s", inv.Reason)
	return inv
}

// testKeys are generated once: RSA generation is slow under -race.
type testKeys struct {
	rsa   *rsa.PrivateKey
	ec256 *ecdsa.PrivateKey
	ec384 *ecdsa.PrivateKey
	edA   ed25519.PrivateKey
	edB   ed25519.PrivateKey
}

var loadTestKeys = sync.OnceValues(func() (*testKeys, error) {
	var k testKeys
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, err
	}
	if k.ec256, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	if k.ec384, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader); err != nil {
		return nil, err
	}
	if _, k.edA, err = ed25519.GenerateKey(rand.Reader); err != nil {
		return nil, err
	}
	if _, k.edB, err = ed25519.GenerateKey(rand.Reader); err != nil {
		return nil, err
	}
	return &k, nil
})

func keys(t *testing.T) *testKeys {
	t.Helper()
	k, err := loadTestKeys()
	require.NoError(t, err)
	return k
}

// writePEM writes pub as a PKIX "PUBLIC KEY" PEM file and returns its path.
func writePEM(t *testing.T, dir, name string, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return writeBlock(t, dir, name, &pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func writeBlock(t *testing.T, dir, name string, block *pem.Block) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	return path
}

// tenantRecordExists reports whether the store holds a record for tenant.
func tenantRecordExists(t *testing.T, store *graphstore.Store, tenant string) bool {
	t.Helper()
	var found bool
	require.NoError(t, store.View(func(tx *graphstore.Tx) (err error) {
		found, err = tx.Records().TenantGet(tenant, &tenantRecord{})
		return err
	}))
	return found
}

func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
