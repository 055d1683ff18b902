package tenancy

import (
	"crypto/sha256"
	"strings"

	"github.com/tether-run/tether/internal/clock"
)

// Resolver finds the tenant a request is for from its Authorization header
// alone, without a store: what a front that routes each tenant to the server
// holding it needs before it knows which server that is. Static tokens and
// JWTs are checked in full (signature, claims, the cache of verified
// tokens), exactly as Authenticate checks them; an API key's shape is
// checked and its tenant read from it, and the server that holds the tenant
// checks its secret.
type Resolver struct {
	jwt    *jwtVerifier
	static staticTokens
}

// NewResolver loads the keys of cfg as NewService does.
func NewResolver(cfg Config, clk clock.Clock) (*Resolver, error) {
	clk = clock.OrReal(clk)
	verifier, err := newJWTVerifier(cfg, clk)
	if err != nil {
		return nil, err
	}
	static, err := newStaticTokens(cfg)
	if err != nil {
		return nil, err
	}
	return &Resolver{jwt: verifier, static: static}, nil
}

// Tenant returns the tenant an Authorization header ("Bearer <token>")
// names. Every failure is a *fault.Unauthorized with the reason
// Authenticate would give.
func (r *Resolver) Tenant(authorizationHeader string) (string, error) {
	token, err := bearerToken(authorizationHeader)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(token))
	if p, ok := r.static.match(sum); ok {
		return p.Tenant, nil
	}
	if strings.HasPrefix(token, apiKeyPrefix) {
		tenant, rest, ok1 := strings.Cut(strings.TrimPrefix(token, apiKeyPrefix), ".")
		id, secret, ok2 := strings.Cut(rest, ".")
		if !ok1 || !ok2 || !validTenant(tenant) || !validKeyID(id) || len(secret) != keySecretLength {
			return "", unauthorized("malformed API key")
		}
		return tenant, nil
	}
	p, err := r.jwt.verify(token, sum)
	if err != nil {
		return "", err
	}
	return p.Tenant, nil
}
