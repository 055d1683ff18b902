package tenancy

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/graphstore"
)

// Config is the server's authentication and policy settings.
type Config struct {
	JWTSecrets []string    // HS256 secrets; any one verifies (rotation)
	PublicKeys []PublicKey // PEM files: RSA -> RS256, ECDSA P-256/384/521 -> ES256/384/512, Ed25519 -> EdDSA
	// Issuer and Audience are checked when non-empty.
	Issuer, Audience string
	// Static tokens of the seed subjects, all in tenant "default": head is a
	// dispatcher, left_claw and right_claw are workers. They are a
	// compatibility layer (legacySeedSubjects says for what).
	HeadTokens, LeftClawTokens, RightClawTokens []string
	// Defaults are the server defaults of every policy field. A zero TTL or
	// attempts field takes the documented default (300000, 7200000, 5); a
	// zero RetentionMS takes a week, a negative one keeps forever; a zero
	// RetryInitialMS takes 5000 (a negative one: no backoff), a zero
	// RetryMaxMS 600000.
	Defaults Policy
	// TTLCeilingMS is the most claim_ttl_max_ms may be; 0 means 86400000.
	TTLCeilingMS int64
}

// Documented defaults: the Policy schema in openapi.yaml and the server
// settings table in README.md.
const (
	defaultClaimTTLDefaultMS = 300_000
	defaultClaimTTLMaxMS     = 7_200_000
	defaultMaxAttempts       = 5
	defaultTTLCeilingMS      = 86_400_000
	defaultRetentionMS       = 7 * 24 * 3600 * 1000 // a week
	defaultRetryInitialMS    = 5_000                // 5 s, 10 s, 20 s, ...
	defaultRetryMaxMS        = 600_000              // at most 10 min
)

// DefaultBlobQuotaBytes is a tenant's blob quota when nothing configures
// one (TETHER_BLOB_QUOTA_BYTES); a zero Policy.BlobQuotaBytes means no cap.
const DefaultBlobQuotaBytes = 1 << 30

// HasCredentials reports whether any secret, public key or static token is
// configured, that is whether any request could ever authenticate.
func (c Config) HasCredentials() bool {
	lists := [][]string{c.JWTSecrets}
	for _, seed := range legacySeedSubjects(c) {
		lists = append(lists, seed.tokens)
	}
	for _, list := range lists {
		for _, s := range list {
			if s != "" {
				return true
			}
		}
	}
	return len(c.PublicKeys) > 0
}

// maxTokenLength bounds a bearer token, well above any real JWT.
const maxTokenLength = 8 << 10

// Service authenticates callers and keeps tenants, policies and API keys.
type Service struct {
	store     *graphstore.Store
	clock     clock.Clock
	jwt       *jwtVerifier
	static    staticTokens
	defaults  Policy
	ceilingMS int64
	limiter   *limiter

	// policies holds the effective policy of every tenant known to have a
	// record: tenant id -> Policy. Being here is also what spares
	// Authenticate a write.
	policies sync.Map
}

// NewService loads the configured keys and checks the policy defaults. It
// fails when a key file is unreadable or not a supported public key.
func NewService(cfg Config, store *graphstore.Store, clk clock.Clock) (*Service, error) {
	if store == nil {
		return nil, errors.New("tenant: no store")
	}
	clk = clock.OrReal(clk)
	defaults := cfg.Defaults
	if defaults.ClaimTTLDefaultMS == 0 {
		defaults.ClaimTTLDefaultMS = defaultClaimTTLDefaultMS
	}
	if defaults.ClaimTTLMaxMS == 0 {
		defaults.ClaimTTLMaxMS = defaultClaimTTLMaxMS
	}
	if defaults.MaxAttemptsDefault == 0 {
		defaults.MaxAttemptsDefault = defaultMaxAttempts
	}
	switch {
	case defaults.RetentionMS == 0:
		defaults.RetentionMS = defaultRetentionMS
	case defaults.RetentionMS < 0:
		defaults.RetentionMS = 0 // keep forever
	}
	switch {
	case defaults.RetryInitialMS == 0:
		defaults.RetryInitialMS = defaultRetryInitialMS
	case defaults.RetryInitialMS < 0:
		defaults.RetryInitialMS = 0 // retry at once
	}
	if defaults.RetryMaxMS == 0 {
		defaults.RetryMaxMS = max(defaultRetryMaxMS, defaults.RetryInitialMS)
	}
	ceiling := cfg.TTLCeilingMS
	if ceiling == 0 {
		ceiling = defaultTTLCeilingMS
	}
	if err := defaults.validate(ceiling, PolicyPatch{}); err != nil {
		return nil, fmt.Errorf("invalid default policy: %w", err)
	}
	verifier, err := newJWTVerifier(cfg, clk)
	if err != nil {
		return nil, err
	}
	static, err := newStaticTokens(cfg)
	if err != nil {
		return nil, err
	}
	return &Service{
		store:     store,
		clock:     clk,
		jwt:       verifier,
		static:    static,
		defaults:  defaults,
		ceilingMS: ceiling,
		limiter:   newLimiter(clk),
	}, nil
}

// Authenticate checks an Authorization header ("Bearer <token>") and returns
// the caller. A static token, an API key (tether.…) or a JWT is accepted; any
// credential problem is a *fault.Unauthorized. The first valid token naming a
// tenant brings that tenant into being.
func (s *Service) Authenticate(ctx context.Context, authorizationHeader string) (*Principal, error) {
	token, err := bearerToken(authorizationHeader)
	if err != nil {
		return nil, err
	}
	// One hash serves the static tokens and the JWT cache.
	sum := sha256.Sum256([]byte(token))
	p, ok := s.static.match(sum)
	if !ok {
		if strings.HasPrefix(token, apiKeyPrefix) {
			// Looked up on every request, never cached: a deleted key fails at once.
			p, err = s.authenticateAPIKey(token)
		} else {
			p, err = s.jwt.verify(token, sum)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := s.ensureTenant(ctx, p.Tenant); err != nil {
		return nil, err
	}
	return p, nil
}

// bearerToken extracts the token of an Authorization header.
func bearerToken(header string) (string, error) {
	if header == "" {
		return "", unauthorized("missing Authorization header")
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", unauthorized("Authorization header must be \"Bearer <token>\"")
	}
	token = strings.TrimSpace(token)
	switch {
	case token == "":
		return "", unauthorized("missing bearer token")
	case len(token) > maxTokenLength:
		return "", unauthorized("token too long")
	}
	return token, nil
}

// Allow takes one request from the token bucket of (tenant, subject), which
// refills at rps a second with a burst of twice that; rps <= 0 is no limit.
// When refused, retryAfter is how long until a request would be allowed.
func (s *Service) Allow(tenant, subject string, rps float64) (ok bool, retryAfter time.Duration) {
	return s.limiter.allow(tenant, subject, rps)
}
