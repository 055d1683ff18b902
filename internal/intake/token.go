package intake

import (
	"errors"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tether-run/tether/internal/clock"
)

// Subject is the identity the intake creates nodes as: their created_by.
const Subject = "intake"

// tokenTTL is how long a minted token lives; one is minted again once half
// of it has passed, so a token never expires in flight.
const tokenTTL = 10 * time.Minute

// maxTokens bounds the tokens kept (one per tenant seen lately); past it
// the cache starts afresh.
const maxTokens = 4096

// Signer mints the tokens the intake presents to the API: HS256 JWTs with
// the tenant's tid, Subject as sub and the dispatcher role (a root node
// needs it), signed with one of the server's own TETHER_JWT_SECRET values.
// Issuer and Audience are set when the server checks them.
type Signer struct {
	Secret   string
	Issuer   string
	Audience string
	// Clock is the server's clock, which judges the token's exp.
	Clock clock.Clock

	mu     sync.Mutex
	tokens map[string]token
}

type token struct {
	bearer  string
	renewAt time.Time
}

// errNoSecret says the Signer cannot sign.
var errNoSecret = errors.New("intake: no JWT secret to sign the intake's tokens with (TETHER_JWT_SECRET)")

// bearer returns a token for tenant, minting one when the last is past
// half its life. Reusing it keeps the server's verified-token cache warm.
func (s *Signer) bearer(tenant string) (string, error) {
	if s.Secret == "" {
		return "", errNoSecret
	}
	now := clock.OrReal(s.Clock).Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[tenant]; ok && now.Before(t.renewAt) {
		return t.bearer, nil
	}
	claims := jwt.MapClaims{
		"sub": Subject, "tid": tenant, "roles": []string{"dispatcher"},
		"iat": now.Unix(), "exp": now.Add(tokenTTL).Unix(),
	}
	if s.Issuer != "" {
		claims["iss"] = s.Issuer
	}
	if s.Audience != "" {
		claims["aud"] = s.Audience
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(s.Secret))
	if err != nil {
		return "", err
	}
	if s.tokens == nil || len(s.tokens) >= maxTokens {
		s.tokens = map[string]token{}
	}
	s.tokens[tenant] = token{bearer: signed, renewAt: now.Add(tokenTTL / 2)}
	return signed, nil
}
