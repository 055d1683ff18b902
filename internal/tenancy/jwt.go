package tenancy

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

// tokenClaims are the claims Tether reads from a JWT.
type tokenClaims struct {
	jwt.RegisteredClaims
	TID   string   `json:"tid"`
	Roles []string `json:"roles"` // nil when absent: the default roles
}

// jwtKey is one configured public key with the one algorithm it verifies.
type jwtKey struct {
	key    crypto.PublicKey
	alg    string
	parser *jwt.Parser
}

// jwtVerifier checks JWTs against the configured secrets and public keys.
type jwtVerifier struct {
	secrets  jwt.VerificationKeySet
	hsParser *jwt.Parser
	keys     map[string]*jwtKey
	issuer   string
	audience string
	clock    clock.Clock
	cache    *tokenCache // tokens verified with these keys, issuer and audience
}

func newJWTVerifier(cfg Config, clk clock.Clock) (*jwtVerifier, error) {
	v := &jwtVerifier{
		keys: map[string]*jwtKey{}, issuer: cfg.Issuer, audience: cfg.Audience,
		clock: clk, cache: newTokenCache(defaultTokenCacheSize),
	}
	parser := func(alg string) *jwt.Parser {
		opts := []jwt.ParserOption{
			jwt.WithValidMethods([]string{alg}),
			jwt.WithTimeFunc(clk.Now),
			jwt.WithExpirationRequired(),
		}
		if cfg.Issuer != "" {
			opts = append(opts, jwt.WithIssuer(cfg.Issuer))
		}
		if cfg.Audience != "" {
			opts = append(opts, jwt.WithAudience(cfg.Audience))
		}
		return jwt.NewParser(opts...)
	}
	for _, s := range cfg.JWTSecrets {
		if s != "" {
			v.secrets.Keys = append(v.secrets.Keys, []byte(s))
		}
	}
	v.hsParser = parser(jwt.SigningMethodHS256.Alg())
	for _, pk := range cfg.PublicKeys {
		if pk.KID == "" {
			return nil, fmt.Errorf("public key %s has no kid", pk.Path)
		}
		if _, dup := v.keys[pk.KID]; dup {
			return nil, fmt.Errorf("public key kid %q is configured twice", pk.KID)
		}
		key, method, err := loadPublicKey(pk.Path)
		if err != nil {
			return nil, fmt.Errorf("error loading public key %q from %s: %w", pk.KID, pk.Path, err)
		}
		v.keys[pk.KID] = &jwtKey{key: key, alg: method.Alg(), parser: parser(method.Alg())}
	}
	return v, nil
}

// jwtHeader is the part of a JWT header that picks the key.
type jwtHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

// peekHeader decodes the header segment, before any verification, only to
// choose the key and the one algorithm allowed with it.
func peekHeader(token string) (jwtHeader, bool) {
	var h jwtHeader
	seg, _, ok := strings.Cut(token, ".")
	if !ok {
		return h, false
	}
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil || json.Unmarshal(b, &h) != nil {
		return h, false
	}
	return h, true
}

func unauthorized(reason string) error { return &fault.Unauthorized{Reason: reason} }

// verify checks the token's signature and claims and returns its principal;
// sum is the token's SHA-256. A token verified before is answered from the
// cache until its exp.
func (v *jwtVerifier) verify(token string, sum [sha256.Size]byte) (*Principal, error) {
	if p, ok := v.cache.get(sum, v.clock.Now()); ok {
		return p, nil
	}
	var c tokenClaims
	p, err := v.check(token, &c)
	if err != nil {
		return nil, err
	}
	// The parser requires exp, so it is set.
	v.cache.put(sum, p, c.ExpiresAt.Time, v.clock.Now())
	return p, nil
}

// check verifies the token's signature and claims, which it decodes into c,
// and returns its principal.
func (v *jwtVerifier) check(token string, c *tokenClaims) (*Principal, error) {
	h, ok := peekHeader(token)
	if !ok || h.Alg == "" {
		return nil, unauthorized("malformed token")
	}
	if strings.EqualFold(h.Alg, "none") {
		return nil, unauthorized("unsigned tokens are not accepted")
	}
	hs256 := jwt.SigningMethodHS256.Alg()
	var (
		parser *jwt.Parser
		key    any
	)
	if k, found := v.keys[h.Kid]; found && h.Kid != "" {
		// The kid names a public key: only its own algorithm may be used, so
		// a token MACed with the public key as an HMAC secret never passes.
		if h.Alg != k.alg {
			return nil, unauthorized("token algorithm does not match its key")
		}
		parser, key = k.parser, k.key
	} else {
		switch {
		case h.Alg != hs256 && h.Kid != "":
			return nil, unauthorized("unknown token key id")
		case h.Alg != hs256 && len(v.keys) > 0 && isPublicKeyAlg(h.Alg):
			return nil, unauthorized("token has no key id")
		case h.Alg != hs256, len(v.secrets.Keys) == 0:
			return nil, unauthorized("token signing algorithm not accepted")
		}
		parser, key = v.hsParser, v.secrets
	}
	if _, err := parser.ParseWithClaims(token, c, func(*jwt.Token) (any, error) { return key, nil }); err != nil {
		return nil, unauthorized(v.reason(err, c))
	}
	switch {
	case c.Subject == "":
		return nil, unauthorized("token has no sub")
	case !graphstore.ValidSubject(c.Subject):
		return nil, unauthorized(subjectReason("token sub", c.Subject))
	case c.TID == "":
		return nil, unauthorized("token has no tid")
	case !validTenant(c.TID):
		return nil, unauthorized("token tid is not a valid tenant id")
	}
	roles := c.Roles
	if roles == nil {
		roles = defaultRoles
	} else if len(roles) == 0 {
		return nil, unauthorized("token grants no roles")
	}
	p, _, ok := newPrincipal(c.TID, c.Subject, roles, ViaJWT)
	if !ok {
		return nil, unauthorized("token names an unknown role")
	}
	return p, nil
}

func isPublicKeyAlg(alg string) bool {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA":
		return true
	}
	return false
}

// reason turns a parse error into a short fixed reason. Signature and format
// errors come first; claim errors only arise once the signature is good, so
// only then do we look at which claims the token carries.
func (v *jwtVerifier) reason(err error, c *tokenClaims) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed token"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "invalid token signature"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "token cannot be verified"
	case c.ExpiresAt == nil:
		return "token has no exp"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "token expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "token not valid yet"
	case v.issuer != "" && c.Issuer == "":
		return "token has no iss"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "token issuer not accepted"
	case v.audience != "" && (len(c.Audience) == 0 || len(c.Audience) == 1 && c.Audience[0] == ""):
		return "token has no aud"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "token audience not accepted"
	}
	return "invalid token"
}
