package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// signed mints a JWT with exactly claims, signed with method and key.
func (e *env) signed(method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	e.t.Helper()
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	require.NoError(e.t, err)
	return tok
}

// authorization is a request editor that sends header as the Authorization
// header verbatim.
func authorization(header string) client.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", header)
		return nil
	}
}

func requireUnauthorized(t *testing.T, res *client.GetTenantResponse, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode(), msgAndArgs...)
	require.Equal(t, "application/problem+json", res.HTTPResponse.Header.Get("Content-Type"), msgAndArgs...)
	requireProblem(t, res.ApplicationProblemJSON401, http.StatusUnauthorized, client.ProblemCodeUnauthorized)
	require.NotNil(t, res.Headers401, msgAndArgs...)
	require.NotNil(t, res.Headers401.WWWAuthenticate, msgAndArgs...)
	require.True(t, strings.HasPrefix(*res.Headers401.WWWAuthenticate, "Bearer"), msgAndArgs...)
}

func TestBadCredentialsAre401(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	now := e.clk.Now()
	valid := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "alice", "tid": "acme", "exp": now.Add(time.Hour).Unix()}
	}
	without := func(name string) jwt.MapClaims {
		c := valid()
		delete(c, name)
		return c
	}
	with := func(name string, v any) jwt.MapClaims {
		c := valid()
		c[name] = v
		return c
	}
	hs256, secret := jwt.SigningMethodHS256, []byte(testSecret)

	// The control: the same claims, correctly signed, are accepted.
	ok, err := e.as("").GetTenantWithResponse(ctx, authorization("Bearer "+e.signed(hs256, secret, valid())))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ok.StatusCode(), string(ok.Body))

	tokens := map[string]string{
		"garbage":             "garbage",
		"three garbage parts": "aaa.bbb.ccc",
		"another secret":      e.signed(hs256, []byte("another-secret-0123456789abcdef0123"), valid()),
		"expired":             e.signed(hs256, secret, with("exp", now.Add(-time.Minute).Unix())),
		"no exp":              e.signed(hs256, secret, without("exp")),
		"no tid":              e.signed(hs256, secret, without("tid")),
		"no sub":              e.signed(hs256, secret, without("sub")),
		"bad tid":             e.signed(hs256, secret, with("tid", "Not A Tenant")),
		"unknown role":        e.signed(hs256, secret, with("roles", []string{"superuser"})),
		"alg none":            e.signed(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid()),
		"alg HS512":           e.signed(jwt.SigningMethodHS512, secret, valid()),
		"unknown API key":     "tether.acme.0123456789abcdef0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"static lookalike":    "head-static-token-x",
	}
	anon := e.as("")
	for name, tok := range tokens {
		res, err := anon.GetTenantWithResponse(ctx, authorization("Bearer "+tok))
		require.NoError(t, err, name)
		requireUnauthorized(t, res, "%s: %s", name, res.Body)
	}

	none, err := anon.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	requireUnauthorized(t, none, "no Authorization header: %s", none.Body)

	for _, header := range []string{"Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "garbage", e.token("acme", "alice")} {
		res, err := anon.GetTenantWithResponse(ctx, authorization(header))
		require.NoError(t, err)
		requireUnauthorized(t, res, "Authorization %q: %s", header, res.Body)
	}

	// A token valid now stops working once the fake clock passes its exp.
	alice := e.user("alice")
	before, err := alice.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, before.StatusCode())
	e.clk.Advance(time.Hour + time.Second)
	after, err := alice.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	requireUnauthorized(t, after, "expired by the clock: %s", after.Body)
}

func TestRolesAreEnforcedWith403(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("r1"))

	reader := e.user("viewer", "reader")
	create, err := reader.CreateNodeWithResponse(ctx, nil, task("nope"))
	require.NoError(t, err)
	requireProblem(t, create.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	read, err := reader.GetNodeWithResponse(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, read.StatusCode(), "a reader reads")

	worker := e.user("alice", "worker")
	del, err := worker.DeleteNodeWithResponse(ctx, "r1", nil)
	require.NoError(t, err)
	requireProblem(t, del.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	defaultRole := e.user("bob") // no roles claim: a worker
	del, err = defaultRole.DeleteNodeWithResponse(ctx, "r1", nil)
	require.NoError(t, err)
	requireProblem(t, del.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	claim, err := defaultRole.ClaimNodeWithResponse(ctx, "r1", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), "the default role is worker: %s", claim.Body)

	d := e.dispatcher()
	pol, err := d.PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{MaxAttemptsDefault: client.Value(int64(9))})
	require.NoError(t, err)
	requireProblem(t, pol.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	tok, err := d.CreateTokenWithResponse(ctx, client.TokenCreate{Sub: "bot", Roles: []client.Role{client.RoleWorker}})
	require.NoError(t, err)
	requireProblem(t, tok.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	list, err := d.ListTokensWithResponse(ctx, nil)
	require.NoError(t, err)
	requireProblem(t, list.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	revoke, err := d.DeleteTokenWithResponse(ctx, "0123456789abcdef0123456789abcdef")
	require.NoError(t, err)
	requireProblem(t, revoke.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	ten, err := e.admin().GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 5, ten.JSON200.Policy.MaxAttemptsDefault, "the refused patch changed nothing")
}

func TestStaticHeadToken(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	head := e.as("head-static-token")

	ten, err := head.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ten.StatusCode(), string(ten.Body))
	require.Equal(t, "default", ten.JSON200.ID)

	res, err := head.CreateNodeWithResponse(ctx, nil, task("from-head"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	require.Equal(t, "head", res.JSON201.CreatedBy)

	claim, err := head.ClaimNodeWithResponse(ctx, "from-head", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
	require.Equal(t, "head", claim.JSON200.Lease.By)

	// A dispatcher, not an admin.
	pol, err := head.PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{MaxAttemptsDefault: client.Value(int64(2))})
	require.NoError(t, err)
	requireProblem(t, pol.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	// Tenant default is its own tenant: acme sees nothing of it.
	got, err := e.dispatcher().GetNodeWithResponse(ctx, "from-head")
	require.NoError(t, err)
	requireProblem(t, got.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	viaJWT, err := e.as(e.token("default", "someone", "reader")).GetNodeWithResponse(ctx, "from-head")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, viaJWT.StatusCode(), "a JWT for tenant default sees it")
}

func TestAPIKeysCreateUseListAndRevoke(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	admin := e.admin()
	e.mustCreate(task("k1"))

	res, err := admin.CreateTokenWithResponse(ctx, client.TokenCreate{Sub: "bot", Roles: []client.Role{client.RoleWorker}, Name: ptr("ci runner")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	key := res.JSON201
	require.NotEmpty(t, key.ID)
	require.NotEmpty(t, key.Token)
	require.Equal(t, "bot", key.Sub)
	require.Equal(t, []client.Role{client.RoleWorker}, key.Roles)
	require.Equal(t, "ci runner", *key.Name)
	require.Equal(t, e.clk.Now().UnixMilli(), key.CreatedAt.UnixMilli())

	// The key is a bearer token for bot, in acme, with the role granted.
	bot := e.as(key.Token)
	ten, err := bot.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ten.StatusCode(), string(ten.Body))
	require.Equal(t, "acme", ten.JSON200.ID)
	claim, err := bot.ClaimNodeWithResponse(ctx, "k1", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
	require.Equal(t, "bot", claim.JSON200.Lease.By)
	denied, err := bot.CreateNodeWithResponse(ctx, nil, task("k2"))
	require.NoError(t, err)
	requireProblem(t, denied.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	// A dispatcher key dispatches, and as a non-admin may mint no key at all.
	disp, err := admin.CreateTokenWithResponse(ctx, client.TokenCreate{Sub: "planner", Roles: []client.Role{client.RoleDispatcher}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, disp.StatusCode(), string(disp.Body))
	require.Nil(t, disp.JSON201.Name)
	planner := e.as(disp.JSON201.Token)
	made, err := planner.CreateNodeWithResponse(ctx, nil, task("k2"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, made.StatusCode(), string(made.Body))
	require.Equal(t, "planner", made.JSON201.CreatedBy)
	escalate, err := planner.CreateTokenWithResponse(ctx, client.TokenCreate{Sub: "planner", Roles: []client.Role{client.RoleAdmin}})
	require.NoError(t, err)
	requireProblem(t, escalate.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	// An admin may grant any role, admin included.
	root, err := admin.CreateTokenWithResponse(ctx, client.TokenCreate{Sub: "ops", Roles: []client.Role{client.RoleAdmin}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, root.StatusCode(), string(root.Body))
	ops, err := e.as(root.JSON201.Token).ListTokensWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ops.StatusCode(), string(ops.Body))

	// The list never shows a secret, and pages.
	all, err := admin.ListTokensWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, all.StatusCode(), string(all.Body))
	require.Len(t, all.JSON200.Items, 3)
	require.Nil(t, all.JSON200.NextCursor)
	for _, secret := range []string{key.Token, disp.JSON201.Token, root.JSON201.Token} {
		require.NotContains(t, string(all.Body), secret)
		require.NotContains(t, string(all.Body), secret[strings.LastIndex(secret, ".")+1:])
	}
	require.NotContains(t, string(all.Body), `"token"`)
	var listed client.Token
	for _, k := range all.JSON200.Items {
		if k.ID == key.ID {
			listed = k
		}
	}
	require.Equal(t, "bot", listed.Sub)
	require.Equal(t, []client.Role{client.RoleWorker}, listed.Roles)
	require.Equal(t, "ci runner", *listed.Name)

	var paged []string
	var cursor *string
	for range 4 {
		page, err := admin.ListTokensWithResponse(ctx, &client.ListTokensParams{Limit: ptr(2), Cursor: cursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, page.StatusCode(), string(page.Body))
		require.LessOrEqual(t, len(page.JSON200.Items), 2)
		for _, k := range page.JSON200.Items {
			paged = append(paged, k.ID)
		}
		if cursor = page.JSON200.NextCursor; cursor == nil {
			break
		}
	}
	require.Nil(t, cursor, "the pages end")
	want := make([]string, len(all.JSON200.Items))
	for i, k := range all.JSON200.Items {
		want[i] = k.ID
	}
	require.Equal(t, want, paged, "pages of 2 walk the same list")
	badCursor, err := admin.ListTokensWithResponse(ctx, &client.ListTokensParams{Cursor: ptr("not-a-cursor")})
	require.NoError(t, err)
	requireProblem(t, badCursor.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)

	// Revoking stops the key on the very next request.
	del, err := admin.DeleteTokenWithResponse(ctx, key.ID)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))
	gone, err := bot.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	requireUnauthorized(t, gone, "revoked key: %s", gone.Body)
	renew, err := bot.RenewLeaseWithResponse(ctx, "k1", client.RenewRequest{})
	require.NoError(t, err)
	requireProblem(t, renew.ApplicationProblemJSON401, http.StatusUnauthorized, client.ProblemCodeUnauthorized)
	still, err := planner.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, still.StatusCode(), "other keys keep working")

	again, err := admin.DeleteTokenWithResponse(ctx, key.ID)
	require.NoError(t, err)
	requireProblem(t, again.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	for _, id := range []string{"0123456789abcdef0123456789abcdef", "nope"} {
		unknown, err := admin.DeleteTokenWithResponse(ctx, id)
		require.NoError(t, err)
		requireProblem(t, unknown.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	}
	after, err := admin.ListTokensWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Len(t, after.JSON200.Items, 2)
}

func TestCreateTokenRejectsBadInput(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	admin := e.admin()
	for name, body := range map[string]string{
		"unknown field": `{"sub":"bot","roles":["worker"],"typo":1}`,
		"unknown role":  `{"sub":"bot","roles":["superuser"]}`,
		"no sub":        `{"roles":["worker"]}`,
		"empty roles":   `{"sub":"bot","roles":[]}`,
		"bad sub":       `{"sub":"a b/c","roles":["worker"]}`,
	} {
		res, err := admin.CreateTokenWithBodyWithResponse(ctx, "application/json", strings.NewReader(body))
		require.NoError(t, err, name)
		require.Equal(t, http.StatusBadRequest, res.StatusCode(), "%s: %s", name, res.Body)
		requireProblem(t, res.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	}
	list, err := admin.ListTokensWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, list.JSON200.Items, "no bad request minted a key")
}

func TestTenantPolicyDefaultsPatchAndValidation(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	admin := e.admin()
	defaults := client.Policy{ClaimTTLDefaultMS: 300000, ClaimTTLMaxMS: 7200000, MaxAttemptsDefault: 5, RetentionMS: 604800000, RetryInitialMS: 5000, RetryMaxMS: 600000}

	reader := e.user("viewer", "reader")
	get := func() client.Policy {
		t.Helper()
		res, err := reader.GetTenantWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, "acme", res.JSON200.ID)
		return res.JSON200.Policy
	}
	require.Equal(t, defaults, get())

	res, err := admin.PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{
		MaxAttemptsDefault: client.Value(int64(7)), MaxLeasesPerIdentity: client.Value(int64(3)), ClaimTTLDefaultMS: client.Value(int64(60000)),
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	changed := client.Policy{ClaimTTLDefaultMS: 60000, ClaimTTLMaxMS: 7200000, MaxAttemptsDefault: 7, MaxLeasesPerIdentity: 3, RetentionMS: 604800000, RetryInitialMS: 5000, RetryMaxMS: 600000}
	require.Equal(t, changed, *res.JSON200)
	require.Equal(t, changed, get())
	n := e.mustCreate(task("p1"))
	require.EqualValues(t, 7, n.MaxAttempts, "new nodes take the tenant's max_attempts_default")

	// null puts a field back to the server default; absent fields stay.
	res, err = admin.PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{MaxAttemptsDefault: client.Null[int64]()})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	changed.MaxAttemptsDefault = 5
	require.Equal(t, changed, *res.JSON200)
	require.Equal(t, changed, get())

	// The plain application/json content type is a merge patch too.
	res, err = admin.PatchTenantPolicyWithResponse(ctx, client.PolicyPatch{ClaimTTLDefaultMS: client.Null[int64](), MaxLeasesPerIdentity: client.Null[int64]()})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Equal(t, defaults, get())

	invalid := map[string]client.PolicyPatch{
		"default ttl below 1000":  {ClaimTTLDefaultMS: client.Value(int64(999))},
		"max ttl below 1000":      {ClaimTTLMaxMS: client.Value(int64(999))},
		"default above max":       {ClaimTTLDefaultMS: client.Value(int64(7200001))},
		"max below default":       {ClaimTTLMaxMS: client.Value(int64(299999))},
		"max above ceiling":       {ClaimTTLMaxMS: client.Value(int64(86400001))},
		"negative leases":         {MaxLeasesPerIdentity: client.Value(int64(-1))},
		"negative rate":           {RequestsPerSecond: client.Value(-1.0)},
		"zero attempts":           {MaxAttemptsDefault: client.Value(int64(0))},
		"valid field, bad field":  {MaxAttemptsDefault: client.Value(int64(9)), ClaimTTLDefaultMS: client.Value(int64(10))},
		"valid ttl, ceiling miss": {ClaimTTLDefaultMS: client.Value(int64(60000)), ClaimTTLMaxMS: client.Value(int64(90000000))},
	}
	for name, patch := range invalid {
		res, err := admin.PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, patch)
		require.NoError(t, err, name)
		require.Equal(t, http.StatusBadRequest, res.StatusCode(), "%s: %s", name, res.Body)
		requireProblem(t, res.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
		require.NotEmpty(t, res.ApplicationProblemJSON400.Field, name)
		require.Equal(t, defaults, get(), "%s changed nothing", name)
	}
	for name, body := range map[string]string{
		"unknown field":   `{"max_leases":1}`,
		"string value":    `{"claim_ttl_max_ms":"60000"}`,
		"fractional ttl":  `{"claim_ttl_default_ms":1500.5}`,
		"not an object":   `[1]`,
		"malformed":       `{"claim_ttl_max_ms":`,
		"unknown + valid": `{"max_attempts_default":9,"typo":1}`,
	} {
		res, err := admin.PatchTenantPolicyWithBodyWithResponse(ctx, "application/merge-patch+json", strings.NewReader(body))
		require.NoError(t, err, name)
		require.Equal(t, http.StatusBadRequest, res.StatusCode(), "%s: %s", name, res.Body)
		require.Equal(t, "application/problem+json", res.HTTPResponse.Header.Get("Content-Type"), name)
		requireProblem(t, res.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
		require.Equal(t, defaults, get(), "%s changed nothing", name)
	}
	typo, err := admin.PatchTenantPolicyWithBodyWithResponse(ctx, "application/merge-patch+json", strings.NewReader(`{"typo":1}`))
	require.NoError(t, err)
	requireProblem(t, typo.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	require.Equal(t, "typo", typo.ApplicationProblemJSON400.Field, "an unknown field is named")
}

func TestLoweredTTLMaxCapsClaims(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	res, err := e.admin().PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{
		ClaimTTLDefaultMS: client.Value(int64(30000)), ClaimTTLMaxMS: client.Value(int64(60000)),
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	e.mustCreate(task("c1"))
	e.mustCreate(task("c2"))
	alice := e.user("alice")

	capped, err := alice.ClaimNodeWithResponse(ctx, "c1", client.ClaimRequest{TTLMS: ptr(int64(120000))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, capped.StatusCode(), string(capped.Body))
	require.NotNil(t, capped.JSON200.CappedToMax)
	require.True(t, *capped.JSON200.CappedToMax)
	require.EqualValues(t, 60000, *capped.JSON200.ClaimTTLMaxMS)
	require.EqualValues(t, 60000, capped.JSON200.Lease.TTLMS)
	require.Equal(t, e.clk.Now().Add(time.Minute).UnixMilli(), capped.JSON200.Lease.Expires)

	def, err := alice.ClaimNodeWithResponse(ctx, "c2", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, def.StatusCode(), string(def.Body))
	require.Nil(t, def.JSON200.CappedToMax)
	require.EqualValues(t, 30000, def.JSON200.Lease.TTLMS, "the tenant's claim_ttl_default_ms")

	ext, err := alice.ExtendLeaseWithResponse(ctx, "c2", client.ExtendRequest{MS: 3600000})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ext.StatusCode(), string(ext.Body))
	require.True(t, *ext.JSON200.CappedToMax)
	require.EqualValues(t, 60000, *ext.JSON200.ClaimTTLMaxMS)
	require.Equal(t, e.clk.Now().Add(time.Minute).UnixMilli(), ext.JSON200.Lease.Expires)
}

func TestRequestsPerSecondLimitsEachIdentity(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	res, err := e.admin().PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{RequestsPerSecond: client.Value(1.0)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.EqualValues(t, 1, res.JSON200.RequestsPerSecond)

	alice := e.user("alice")
	for i := range 2 {
		ok, err := alice.GetTenantWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, ok.StatusCode(), "request %d is within the burst of 2: %s", i+1, ok.Body)
	}
	limited, err := alice.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, limited.StatusCode(), string(limited.Body))
	requireProblem(t, limited.ApplicationProblemJSON429, http.StatusTooManyRequests, client.ProblemCodeRateLimited)
	require.Equal(t, "application/problem+json", limited.HTTPResponse.Header.Get("Content-Type"))
	require.Equal(t, "1", limited.HTTPResponse.Header.Get("Retry-After"))
	require.Equal(t, 1, limited.Headers429.RetryAfter)

	// The limit is per identity: bob, and alice's other credentials for
	// another tenant, are unaffected.
	bob, err := e.user("bob").GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, bob.StatusCode(), string(bob.Body))
	elsewhere, err := e.as(e.token("other", "alice")).GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, elsewhere.StatusCode(), "the rate is acme's policy, not other's")

	// Still limited until the bucket refills on the (fake) clock.
	again, err := alice.ListNodesWithResponse(ctx, nil)
	require.NoError(t, err)
	requireProblem(t, again.ApplicationProblemJSON429, http.StatusTooManyRequests, client.ProblemCodeRateLimited)
	e.clk.Advance(time.Second)
	refilled, err := alice.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, refilled.StatusCode(), string(refilled.Body))

	// Lifting the cap lifts it at once.
	e.clk.Advance(10 * time.Second)
	lift, err := e.admin().PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{RequestsPerSecond: client.Null[float64]()})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, lift.StatusCode(), string(lift.Body))
	for range 5 {
		ok, err := alice.GetTenantWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, ok.StatusCode(), string(ok.Body))
	}
}

func TestMaxLeasesPerIdentity(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	res, err := e.admin().PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{MaxLeasesPerIdentity: client.Value(int64(1))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	e.mustCreate(task("m1"))
	e.mustCreate(task("m2"))
	alice, bob := e.user("alice"), e.user("bob")

	first, err := alice.ClaimNodeWithResponse(ctx, "m1", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, first.StatusCode(), string(first.Body))
	second, err := alice.ClaimNodeWithResponse(ctx, "m2", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, second.StatusCode(), string(second.Body))
	requireProblem(t, second.ApplicationProblemJSON429, http.StatusTooManyRequests, client.ProblemCodeRateLimited)
	require.NotEmpty(t, second.HTTPResponse.Header.Get("Retry-After"))
	m2, err := alice.GetNodeWithResponse(ctx, "m2")
	require.NoError(t, err)
	require.Equal(t, client.NodeStatusQueued, m2.JSON200.Status, "the refused claim took nothing")
	require.EqualValues(t, 0, m2.JSON200.Attempts)

	renew, err := alice.ClaimNodeWithResponse(ctx, "m1", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, renew.StatusCode(), "re-claiming a held node is a renewal, not a new lease: %s", renew.Body)
	require.True(t, renew.JSON200.Renewed)
	other, err := bob.ClaimNodeWithResponse(ctx, "m2", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, other.StatusCode(), "the cap is per identity: %s", other.Body)

	_, err = alice.CompleteNodeWithResponse(ctx, "m1", client.CompleteRequest{})
	require.NoError(t, err)
	e.mustCreate(task("m3"))
	freed, err := alice.ClaimNodeWithResponse(ctx, "m3", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, freed.StatusCode(), "a finished lease frees the slot: %s", freed.Body)
}
