package tenancy

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
)

// staticTenant is the tenant of every static token.
const staticTenant = "default"

// staticToken is one token of the OpenClaw Spine environment, kept as its
// SHA-256 so that comparing never leaks the token's length.
type staticToken struct {
	sum       [sha256.Size]byte
	subject   string
	principal *Principal // shared by every request made with the token
}

type staticTokens []staticToken

func newStaticTokens(cfg Config) (staticTokens, error) {
	var out staticTokens
	add := func(tokens []string, subject, role string) error {
		for _, t := range tokens {
			if t == "" {
				continue
			}
			sum := sha256.Sum256([]byte(t))
			for _, o := range out {
				if o.sum == sum && o.subject != subject {
					return errors.New("the same static token is configured for " + o.subject + " and " + subject)
				}
			}
			p, _, _ := newPrincipal(staticTenant, subject, []string{role}, ViaStatic)
			out = append(out, staticToken{sum: sum, subject: subject, principal: p})
		}
		return nil
	}
	if err := add(cfg.HeadTokens, "head", RoleDispatcher.String()); err != nil {
		return nil, err
	}
	if err := add(cfg.LeftClawTokens, "left_claw", RoleWorker.String()); err != nil {
		return nil, err
	}
	if err := add(cfg.RightClawTokens, "right_claw", RoleWorker.String()); err != nil {
		return nil, err
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
