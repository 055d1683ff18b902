package tenancy

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
)

// staticTenant is the tenant of every static token.
const staticTenant = "default"

// staticToken is one token of a seed subject (legacySeedSubjects), kept as its
// SHA-256 so that comparing never leaks the token's length.
type staticToken struct {
	sum       [sha256.Size]byte
	subject   string
	principal *Principal // shared by every request made with the token
}

type staticTokens []staticToken

// seedSubject is a list of static tokens and the identity every one of them
// authenticates as, in tenant "default".
type seedSubject struct {
	subject string
	role    Role
	tokens  []string
}

// legacySeedSubjects is a compatibility layer for the OpenClaw Spine
// environment, which Tether started in: before identities were configured
// (API keys, JWTs), that environment gave its three agents fixed names, a
// dispatcher "head" and two workers "left_claw" and "right_claw", and
// HEAD_TOKEN, LEFT_CLAW_TOKEN and RIGHT_CLAW_TOKEN (Config's HeadTokens,
// LeftClawTokens and RightClawTokens) still authenticate as them. Nothing
// else depends on these names: a deployment that mints API keys (tether
// token create) or signs JWTs for its identities needs none of them, and a
// seed list left empty adds nothing.
func legacySeedSubjects(cfg Config) []seedSubject {
	return []seedSubject{
		{subject: "head", role: RoleDispatcher, tokens: cfg.HeadTokens},
		{subject: "left_claw", role: RoleWorker, tokens: cfg.LeftClawTokens},
		{subject: "right_claw", role: RoleWorker, tokens: cfg.RightClawTokens},
	}
}

func newStaticTokens(cfg Config) (staticTokens, error) {
	var out staticTokens
	for _, seed := range legacySeedSubjects(cfg) {
		for _, t := range seed.tokens {
			if t == "" {
				continue
			}
			sum := sha256.Sum256([]byte(t))
			for _, o := range out {
				if o.sum == sum && o.subject != seed.subject {
					return nil, errors.New("the same static token is configured for " + o.subject + " and " + seed.subject)
				}
			}
			p, _, _ := newPrincipal(staticTenant, seed.subject, []string{seed.role.String()}, ViaStatic)
			out = append(out, staticToken{sum: sum, subject: seed.subject, principal: p})
		}
	}
	return out, nil
}

// match returns the principal of the token whose SHA-256 is sum when it is a
// static token. Every configured token is compared, in constant time,
// whatever matches.
func (s staticTokens) match(sum [sha256.Size]byte) (*Principal, bool) {
	if len(s) == 0 {
		return nil, false
	}
	found := -1
	for i := range s {
		if subtle.ConstantTimeCompare(sum[:], s[i].sum[:]) == 1 && found < 0 {
			found = i
		}
	}
	if found < 0 {
		return nil, false
	}
	return s[found].principal, true
}
