package tenancy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
)

func patch(t *testing.T, raw string) PolicyPatch {
	t.Helper()
	p, err := DecodePolicyPatch([]byte(raw))
	require.NoError(t, err, raw)
	return p
}

var documentedDefaults = Policy{
	ClaimTTLDefaultMS:  300000,
	ClaimTTLMaxMS:      7200000,
	MaxAttemptsDefault: 5,
	RetentionMS:        604800000,
	RetryInitialMS:     5000,
	RetryMaxMS:         600000,
}

func TestPolicyDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	b := setup(t, Config{})
	got, err := b.svc.Tenant(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, Tenant{ID: "acme", Policy: documentedDefaults}, got)

	custom := Policy{ClaimTTLDefaultMS: 60000, ClaimTTLMaxMS: 600000, MaxAttemptsDefault: 3, MaxLeasesPerIdentity: 10, RequestsPerSecond: 50, RetentionMS: 3600000, BlobQuotaBytes: 1 << 30, RetryInitialMS: 1000, RetryMaxMS: 60000}
	b = setup(t, Config{Defaults: custom})
	p, err := b.svc.Policy(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, custom, p)

	raw, err := json.Marshal(Tenant{ID: "acme", Policy: custom})
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"acme","policy":{"claim_ttl_default_ms":60000,"claim_ttl_max_ms":600000,
		"max_attempts_default":3,"max_leases_per_identity":10,"requests_per_second":50,"retention_ms":3600000,"blob_quota_bytes":1073741824,"retry_initial_ms":1000,"retry_max_ms":60000}}`, string(raw))

	_, err = b.svc.Policy(ctx, "Not A Tenant")
	requireInvalid(t, err, "tenant")
}

func TestPolicyInvalidServerDefaults(t *testing.T) {
	t.Parallel()
	store := setup(t, Config{}).store
	for _, cfg := range []Config{
		{Defaults: Policy{ClaimTTLDefaultMS: 500}},
		{Defaults: Policy{ClaimTTLDefaultMS: 9000000}}, // above the default max
		{TTLCeilingMS: 60000},                          // below the default max
		{Defaults: Policy{RequestsPerSecond: -1}},
	} {
		_, err := NewService(cfg, store, nil)
		require.Error(t, err, "%+v", cfg)
	}
}

func TestPolicyPatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})

	// Warm the cache first: a patch must replace what it holds.
	_, err := b.svc.Policy(ctx, "acme")
	require.NoError(t, err)

	want := documentedDefaults
	want.ClaimTTLDefaultMS = 60000
	want.RequestsPerSecond = 2.5
	want.MaxLeasesPerIdentity = 4
	got, err := b.svc.PatchPolicy(ctx, "acme", patch(t, `{"claim_ttl_default_ms": 60000, "requests_per_second": 2.5, "max_leases_per_identity": 4}`))
	require.NoError(t, err)
	require.Equal(t, want, got)
	got, err = b.svc.Policy(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.True(t, tenantRecordExists(t, b.store, "acme"))

	// Absent fields are unchanged.
	want.MaxAttemptsDefault = 9
	got, err = b.svc.PatchPolicy(ctx, "acme", patch(t, `{"max_attempts_default": 9}`))
	require.NoError(t, err)
	require.Equal(t, want, got)
	got, err = b.svc.PatchPolicy(ctx, "acme", patch(t, `{}`))
	require.NoError(t, err)
	require.Equal(t, want, got)

	// Other tenants keep the defaults.
	other, err := b.svc.Policy(ctx, "other")
	require.NoError(t, err)
	require.Equal(t, documentedDefaults, other)

	// After a restart the stored policy is read back.
	got, err = b.restart(t, Config{}).Policy(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestPolicyNullResetsToServerDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})

	_, err := b.svc.PatchPolicy(ctx, "acme", patch(t, `{"claim_ttl_default_ms": 60000, "max_attempts_default": 2, "requests_per_second": 7}`))
	require.NoError(t, err)
	got, err := b.svc.PatchPolicy(ctx, "acme", patch(t, `{"claim_ttl_default_ms": null, "requests_per_second": null}`))
	require.NoError(t, err)
	want := documentedDefaults
	want.MaxAttemptsDefault = 2
	require.Equal(t, want, got)

	// A reset field follows the server default when that changes; a set one
	// keeps the tenant's value.
	newDefaults := Policy{ClaimTTLDefaultMS: 120000, MaxAttemptsDefault: 8, RequestsPerSecond: 3}
	got, err = b.restart(t, Config{Defaults: newDefaults}).Policy(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, Policy{ClaimTTLDefaultMS: 120000, ClaimTTLMaxMS: 7200000, MaxAttemptsDefault: 2, RequestsPerSecond: 3, RetentionMS: 604800000, RetryInitialMS: 5000, RetryMaxMS: 600000}, got)
}

func TestPolicyPatchValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{TTLCeilingMS: 3600000, Defaults: Policy{ClaimTTLMaxMS: 600000}})
	before, err := b.svc.PatchPolicy(ctx, "acme", patch(t, `{"max_attempts_default": 3}`))
	require.NoError(t, err)

	for _, tc := range []struct {
		raw, field, reason string
	}{
		// A TTL below 1000 is outside the field's range, refused at decode.
		{`{"claim_ttl_default_ms": 999}`, "claim_ttl_default_ms", "from 1000 to"},
		{`{"claim_ttl_default_ms": 0}`, "claim_ttl_default_ms", "from 1000 to"},
		{`{"claim_ttl_default_ms": 999, "claim_ttl_max_ms": 999}`, "claim_ttl_default_ms", "from 1000 to"},
		{`{"claim_ttl_max_ms": 999}`, "claim_ttl_max_ms", "from 1000 to"},
		{`{"claim_ttl_max_ms": 3600001}`, "claim_ttl_max_ms", "server ceiling of 3600000"},
		{`{"claim_ttl_default_ms": 600001}`, "claim_ttl_default_ms", "must not exceed claim_ttl_max_ms: 600000 (10m)"},
		{`{"claim_ttl_max_ms": 200000}`, "claim_ttl_max_ms", "must not be below claim_ttl_default_ms: 300000 (5m)"},
		{`{"claim_ttl_max_ms": 200000, "claim_ttl_default_ms": 250000}`, "claim_ttl_default_ms", "must not exceed claim_ttl_max_ms: 200000 (3m20s)"},
		{`{"max_attempts_default": 0}`, "max_attempts_default", "at least 1"},
	} {
		p, err := DecodePolicyPatch([]byte(tc.raw))
		if err == nil {
			_, err = b.svc.PatchPolicy(ctx, "acme", p)
		}
		inv := requireInvalid(t, err, tc.field)
		require.Contains(t, inv.Reason, tc.reason, tc.raw)
	}
	after, err := b.svc.Policy(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, before, after, "a refused patch changes nothing")

	// Values that are fine: the limits themselves, and zero caps.
	got, err := b.svc.PatchPolicy(ctx, "acme", patch(t, `{"claim_ttl_default_ms": 1000, "claim_ttl_max_ms": 3600000, "max_attempts_default": 1, "max_leases_per_identity": 0, "requests_per_second": 0}`))
	require.NoError(t, err)
	require.Equal(t, Policy{ClaimTTLDefaultMS: 1000, ClaimTTLMaxMS: 3600000, MaxAttemptsDefault: 1, RetentionMS: 604800000, RetryInitialMS: 5000, RetryMaxMS: 600000}, got)

	// Patches built in Go are checked too.
	neg := int64(-1)
	_, err = b.svc.PatchPolicy(ctx, "acme", PolicyPatch{MaxLeasesPerIdentity: Change[int64]{Set: true, Value: &neg}})
	requireInvalid(t, err, "max_leases_per_identity")
	nan := math.NaN()
	_, err = b.svc.PatchPolicy(ctx, "acme", PolicyPatch{RequestsPerSecond: Change[float64]{Set: true, Value: &nan}})
	requireInvalid(t, err, "requests_per_second")

	_, err = b.svc.PatchPolicy(ctx, "../x", PolicyPatch{})
	requireInvalid(t, err, "tenant")
}

func TestDecodePolicyPatch(t *testing.T) {
	t.Parallel()
	p := patch(t, ` { "claim_ttl_default_ms": 60000, "claim_ttl_max_ms": null, "requests_per_second": 1.5e1 } `)
	require.True(t, p.ClaimTTLDefaultMS.Set)
	require.Equal(t, int64(60000), *p.ClaimTTLDefaultMS.Value)
	require.True(t, p.ClaimTTLMaxMS.Set)
	require.Nil(t, p.ClaimTTLMaxMS.Value)
	require.Equal(t, 15.0, *p.RequestsPerSecond.Value)
	require.False(t, p.MaxAttemptsDefault.Set)
	require.False(t, p.MaxLeasesPerIdentity.Set)

	for _, tc := range []struct{ raw, field string }{
		{``, ""},
		{`null`, ""},
		{`[]`, ""},
		{`"x"`, ""},
		{`{`, ""},
		{`{"claim_ttl_default_ms": }`, ""},
		{`{} {}`, ""},
		{`{}x`, ""},
		{`{"bogus": 1}`, "bogus"},
		{`{"Claim_TTL_Default_MS": 1000}`, "Claim_TTL_Default_MS"},
		{`{"claim_ttl_default_ms": 1000, "claim_ttl_default_ms": 2000}`, "claim_ttl_default_ms"},
		{`{"claim_ttl_default_ms": "1000"}`, "claim_ttl_default_ms"},
		{`{"claim_ttl_max_ms": 1.5}`, "claim_ttl_max_ms"},
		{`{"claim_ttl_max_ms": 1e6}`, "claim_ttl_max_ms"},
		{`{"max_attempts_default": true}`, "max_attempts_default"},
		{`{"max_attempts_default": -1}`, "max_attempts_default"},
		{`{"max_leases_per_identity": {}}`, "max_leases_per_identity"},
		{`{"max_leases_per_identity": 99999999999999999999}`, "max_leases_per_identity"},
		{`{"requests_per_second": -0.5}`, "requests_per_second"},
		{`{"blob_quota_bytes": -1}`, "blob_quota_bytes"},
		{`{"blob_quota_bytes": 1.5}`, "blob_quota_bytes"},
		{`{"blob_quota_bytes": 9223372036854775808}`, "blob_quota_bytes"},
		{`{"requests_per_second": "5"}`, "requests_per_second"},
		{`{"requests_per_second": [1]}`, "requests_per_second"},
		{`{"requests_per_second": 1e400}`, "requests_per_second"},
	} {
		_, err := DecodePolicyPatch([]byte(tc.raw))
		requireInvalid(t, err, tc.field)
	}
}

// Concurrent patches and reads: the cache ends at the last committed policy,
// which is what a fresh service reads from the store.
func TestPolicyCacheUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				_, err := b.svc.PatchPolicy(ctx, "acme", patch(t, fmt.Sprintf(`{"max_attempts_default": %d}`, 1+i*100+j)))
				require.NoError(t, err)
			}
		})
		wg.Go(func() {
			for range 50 {
				_, err := b.svc.Policy(ctx, "acme")
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
	cached, err := b.svc.Policy(ctx, "acme")
	require.NoError(t, err)
	stored, err := b.restart(t, Config{}).Policy(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, stored, cached)
}

// encodePatch is the inverse of DecodePolicyPatch, for the fuzz test.
func encodePatch(p PolicyPatch) string {
	var parts []string
	addInt := func(name string, c Change[int64]) {
		switch {
		case !c.Set:
		case c.Value == nil:
			parts = append(parts, strconv.Quote(name)+":null")
		default:
			parts = append(parts, strconv.Quote(name)+":"+strconv.FormatInt(*c.Value, 10))
		}
	}
	addInt(fieldClaimTTLDefault, p.ClaimTTLDefaultMS)
	addInt(fieldClaimTTLMax, p.ClaimTTLMaxMS)
	addInt(fieldMaxAttempts, p.MaxAttemptsDefault)
	addInt(fieldMaxLeases, p.MaxLeasesPerIdentity)
	switch c := p.RequestsPerSecond; {
	case !c.Set:
	case c.Value == nil:
		parts = append(parts, strconv.Quote(fieldRPS)+":null")
	default:
		parts = append(parts, strconv.Quote(fieldRPS)+":"+strconv.FormatFloat(*c.Value, 'g', -1, 64))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func FuzzDecodePolicyPatch(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"claim_ttl_default_ms": 60000, "claim_ttl_max_ms": null}`,
		`{"max_attempts_default": 3, "max_leases_per_identity": 0, "requests_per_second": 2.5}`,
		`{"requests_per_second": 1e-3}`,
		`{"bogus": 1}`,
		`{"claim_ttl_default_ms": -1}`,
		`{"claim_ttl_default_ms": 1, "claim_ttl_default_ms": 2}`,
		`[]`,
		`null`,
		`{"claim_ttl_max_ms": 1.0}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := DecodePolicyPatch(raw)
		if err != nil {
			var inv *fault.Invalid
			if !errors.As(err, &inv) {
				t.Fatalf("error is %T, not *fault.Invalid: %v", err, err)
			}
			return
		}
		for _, c := range []Change[int64]{p.ClaimTTLDefaultMS, p.ClaimTTLMaxMS, p.MaxAttemptsDefault, p.MaxLeasesPerIdentity} {
			if c.Value != nil && (!c.Set || *c.Value < 0) {
				t.Fatalf("bad change %+v from %q", c, raw)
			}
		}
		if v := p.RequestsPerSecond.Value; v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
			t.Fatalf("bad rps %v from %q", *v, raw)
		}
		// What decodes re-encodes to the same patch.
		again, err := DecodePolicyPatch([]byte(encodePatch(p)))
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", encodePatch(p), err)
		}
		require.Equal(t, p, again)
	})
}

// retention_ms is 0 (keep forever) or a second to ten years; null goes back
// to the server default (a week unless the server says otherwise).
func TestRetentionPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	for _, ok := range []int64{0, MinRetentionMS, MaxRetentionMS, 86400000} {
		got, err := b.svc.PatchPolicy(ctx, "acme", patch(t, fmt.Sprintf(`{"retention_ms": %d}`, ok)))
		require.NoError(t, err, ok)
		require.Equal(t, ok, got.RetentionMS)
	}
	for _, bad := range []string{"1", "999", fmt.Sprint(MaxRetentionMS + 1), "-1", "9223372036854775807", `"1d"`} {
		p, err := DecodePolicyPatch([]byte(`{"retention_ms": ` + bad + `}`))
		if err == nil {
			_, err = b.svc.PatchPolicy(ctx, "acme", p)
		}
		requireInvalid(t, err, "retention_ms")
	}
	got, err := b.svc.PatchPolicy(ctx, "acme", patch(t, `{"retention_ms": null}`))
	require.NoError(t, err)
	require.EqualValues(t, 604800000, got.RetentionMS)

	forever := setup(t, Config{Defaults: Policy{RetentionMS: -1}})
	p, err := forever.svc.Policy(ctx, "acme")
	require.NoError(t, err)
	require.Zero(t, p.RetentionMS, "a negative server default keeps forever")
}
