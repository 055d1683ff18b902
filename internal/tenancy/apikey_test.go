package tenancy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

var apiKeyPattern = regexp.MustCompile(`^tether\.acme\.([0-9a-f]{32})\.([A-Za-z0-9_-]{43})$`)

func admin(tenant string) *Principal {
	return &Principal{Tenant: tenant, Subject: "root", Roles: []string{"admin"}, Role: RoleAdmin, Via: ViaJWT}
}

func TestAPIKeyLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()

	k, err := b.svc.CreateKey(ctx, admin("acme"), "bot-1", []string{"worker", "reader"}, "ci runner")
	require.NoError(t, err)
	m := apiKeyPattern.FindStringSubmatch(k.Token)
	require.NotNil(t, m, k.Token)
	require.Equal(t, m[1], k.ID)
	require.Equal(t, APIKey{
		ID: k.ID, Subject: "bot-1", Name: "ci runner", Roles: []string{"reader", "worker"},
		CreatedAt: testStart, CreatedBy: "root",
	}, k.APIKey)

	// Only the hash of the secret is stored.
	var rec apiKeyRecord
	require.NoError(t, b.store.View(func(tx *graphstore.Tx) error {
		found, err := tx.Records().APIKeyGet("acme", k.ID, &rec)
		require.True(t, found)
		return err
	}))
	sum := sha256.Sum256([]byte(m[2]))
	require.Equal(t, hex.EncodeToString(sum[:]), rec.SecretSHA256)
	stored, err := rec.MarshalMsg(nil)
	require.NoError(t, err)
	require.NotContains(t, string(stored), m[2])

	p, err := b.svc.Authenticate(ctx, bearer(k.Token))
	require.NoError(t, err)
	require.Equal(t, &Principal{Tenant: "acme", Subject: "bot-1", Roles: []string{"reader", "worker"}, Role: RoleWorker, Via: ViaAPIKey}, p)
	require.True(t, tenantRecordExists(t, b.store, "acme"))

	// A wrong secret, a key moved to another tenant, and malformed keys fail.
	secret := m[2]
	wrong := "A" + secret[1:]
	if wrong == secret {
		wrong = "B" + secret[1:]
	}
	for _, tc := range []struct{ token, reason string }{
		{"tether.acme." + k.ID + "." + wrong, "invalid API key"},
		{"tether.other." + k.ID + "." + secret, "invalid API key"},
		{"tether.acme." + strings.Repeat("0", 32) + "." + secret, "invalid API key"},
		{"tether.acme." + k.ID, "malformed API key"},
		{"tether.acme." + k.ID + "." + secret + "x", "malformed API key"},
		{"tether.ACME." + k.ID + "." + secret, "malformed API key"},
		{"tether.acme." + strings.ToUpper(k.ID) + "." + secret, "malformed API key"},
	} {
		_, err := b.svc.Authenticate(ctx, bearer(tc.token))
		requireUnauthorized(t, err, tc.reason)
	}

	// Deleting makes it fail at once.
	require.NoError(t, b.svc.DeleteKey(ctx, "acme", k.ID))
	_, err = b.svc.Authenticate(ctx, bearer(k.Token))
	requireUnauthorized(t, err, "invalid API key")

	var nf *fault.NotFound
	require.ErrorAs(t, b.svc.DeleteKey(ctx, "acme", k.ID), &nf)
	require.Equal(t, "token", nf.What)
	require.ErrorAs(t, b.svc.DeleteKey(ctx, "acme", "not-an-id"), &nf)
}

func TestAPIKeyTenantsAreSealed(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	k, err := b.svc.CreateKey(ctx, admin("acme"), "bot-1", nil, "")
	require.NoError(t, err)

	keys, _, err := b.svc.ListKeys(ctx, "other", "", 0)
	require.NoError(t, err)
	require.Empty(t, keys)
	var nf *fault.NotFound
	require.ErrorAs(t, b.svc.DeleteKey(ctx, "other", k.ID), &nf)
	_, err = b.svc.Authenticate(ctx, bearer(k.Token))
	require.NoError(t, err)
}

func TestAPIKeyListPaged(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		k, err := b.svc.CreateKey(ctx, admin("acme"), "bot", nil, "")
		require.NoError(t, err)
		ids = append(ids, k.ID)
		b.clk.Advance(time.Duration(i) * time.Second)
	}
	_, err := b.svc.CreateKey(ctx, admin("other"), "bot", nil, "")
	require.NoError(t, err)

	var got []string
	cursor := ""
	pages := 0
	for {
		page, next, err := b.svc.ListKeys(ctx, "acme", cursor, 2)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 2)
		for _, k := range page {
			got = append(got, k.ID)
			require.Equal(t, "bot", k.Subject)
			require.Equal(t, []string{"worker"}, k.Roles)
		}
		pages++
		if next == "" {
			break
		}
		require.Equal(t, page[len(page)-1].ID, next)
		cursor = next
	}
	require.Equal(t, 3, pages)
	require.ElementsMatch(t, ids, got)
	require.IsIncreasing(t, got)

	// A page that ends exactly at the last key has no next cursor.
	all, next, err := b.svc.ListKeys(ctx, "acme", "", 5)
	require.NoError(t, err)
	require.Len(t, all, 5)
	require.Empty(t, next)

	// Listed keys never carry the secret or its hash.
	raw, err := json.Marshal(all)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "secret")
	require.NotContains(t, string(raw), "token")

	_, _, err = b.svc.ListKeys(ctx, "acme", "zzz", 2)
	requireInvalid(t, err, "cursor")
	// A tenant id that is not one could reach into another tenant's keys.
	_, _, err = b.svc.ListKeys(ctx, "acme\x00"+ids[0][:1], "", 2)
	requireInvalid(t, err, "tenant")
	requireInvalid(t, b.svc.DeleteKey(ctx, "acme\x00x", ids[0]), "tenant")
}

func TestAPIKeyCreateRules(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	dispatcher := &Principal{Tenant: "acme", Subject: "d", Roles: []string{"dispatcher"}, Role: RoleDispatcher}
	reader := &Principal{Tenant: "acme", Subject: "r", Roles: []string{"reader"}, Role: RoleReader}

	var forbidden *fault.Forbidden
	_, err := b.svc.CreateKey(ctx, dispatcher, "bot", []string{"admin"}, "")
	require.ErrorAs(t, err, &forbidden)
	_, err = b.svc.CreateKey(ctx, dispatcher, "bot", []string{"worker", "admin"}, "")
	require.ErrorAs(t, err, &forbidden)
	_, err = b.svc.CreateKey(ctx, reader, "bot", nil, "") // default worker is above reader
	require.ErrorAs(t, err, &forbidden)
	k, err := b.svc.CreateKey(ctx, dispatcher, "bot", []string{"dispatcher"}, "")
	require.NoError(t, err)
	require.Equal(t, []string{"dispatcher"}, k.Roles)

	k, err = b.svc.CreateKey(ctx, admin("acme"), "bot", nil, "")
	require.NoError(t, err)
	require.Equal(t, []string{"worker"}, k.Roles)

	for _, tc := range []struct {
		sub   string
		roles []string
		name  string
		field string
	}{
		{"", nil, "", "sub"},
		{"has space", nil, "", "sub"},
		{"a/b", nil, "", "sub"},
		{strings.Repeat("s", 201), nil, "", "sub"},
		{"bot", []string{}, "", "roles"},
		{"bot", []string{"root"}, "", "roles"},
		{"bot", nil, "line\nbreak", "name"},
		{"bot", nil, strings.Repeat("n", 201), "name"},
	} {
		_, err := b.svc.CreateKey(ctx, admin("acme"), tc.sub, tc.roles, tc.name)
		requireInvalid(t, err, tc.field)
	}

	_, err = b.svc.CreateKey(ctx, nil, "bot", nil, "")
	var unauth *fault.Unauthorized
	require.True(t, errors.As(err, &unauth))
}
