package tenancy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

// NewAPIKey is a key just created, with its token: the only time the token
// is ever available.
type NewAPIKey struct {
	APIKey
	Token string `json:"token"`
}

const (
	apiKeyPrefix    = "tether."
	keyIDBytes      = 16
	keySecretBytes  = 32
	keyIDLength     = 2 * keyIDBytes
	keySecretLength = (keySecretBytes*8 + 5) / 6 // base64url, no padding
	maxKeyNameLen   = 200
	defaultKeyLimit = 100
	maxKeyLimit     = 1000
)

func validKeyID(id string) bool {
	if len(id) != keyIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func validKeyName(name string) bool {
	if len(name) > maxKeyNameLen || !utf8.ValidString(name) {
		return false
	}
	return !strings.ContainsFunc(name, unicode.IsControl)
}

func secretHash(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// authenticateAPIKey checks a token of the form tether.<tenant>.<keyid>.<secret>.
// The key is looked up on every call, so a deleted key fails at once.
func (s *Service) authenticateAPIKey(token string) (*Principal, error) {
	tenant, rest, ok1 := strings.Cut(strings.TrimPrefix(token, apiKeyPrefix), ".")
	id, secret, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !validTenant(tenant) || !validKeyID(id) || len(secret) != keySecretLength {
		return nil, unauthorized("malformed API key")
	}
	var (
		rec   apiKeyRecord
		found bool
	)
	err := s.store.View(func(tx *graphstore.Tx) (err error) {
		found, err = tx.Records().APIKeyGet(tenant, id, &rec)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading API key: %w", err)
	}
	if !found {
		return nil, unauthorized("invalid API key")
	}
	want, err := hex.DecodeString(rec.SecretSHA256)
	got := secretHash(secret)
	if err != nil || subtle.ConstantTimeCompare(got[:], want) != 1 {
		return nil, unauthorized("invalid API key")
	}
	// A key made before its subject's prefix was reserved authenticates
	// no more: that subject could pass for what the prefix names.
	if !graphstore.ValidSubject(rec.Subject) {
		return nil, unauthorized(subjectReason("API key sub", rec.Subject))
	}
	p, _, ok := newPrincipal(tenant, rec.Subject, rec.Roles, ViaAPIKey)
	if !ok {
		return nil, unauthorized("invalid API key")
	}
	return p, nil
}

// CreateKey makes an API key for subject sub in the caller's tenant. roles nil
// grants the default ["worker"]; the caller may not grant a role above its
// own. That only admins may create keys is the route's rule, enforced by the
// api package. The key is on stable storage when CreateKey returns.
func (s *Service) CreateKey(ctx context.Context, p *Principal, sub string, roles []string, name string) (NewAPIKey, error) {
	if p == nil || !validTenant(p.Tenant) {
		return NewAPIKey{}, unauthorized("not authenticated")
	}
	if problem := graphstore.SubjectProblem(sub); problem != "" {
		return NewAPIKey{}, fault.Invalidf("sub", "%s", problem)
	}
	if roles == nil {
		roles = defaultRoles
	}
	if len(roles) == 0 {
		return NewAPIKey{}, fault.Invalidf("roles", "must name at least one role")
	}
	norm, highest, unknown, ok := normaliseRoles(roles)
	if !ok {
		return NewAPIKey{}, fault.Invalidf("roles", "unknown role %q (want reader, worker, dispatcher or admin)", truncate(unknown, 32))
	}
	if highest > p.Role {
		return NewAPIKey{}, &fault.Forbidden{Reason: fmt.Sprintf("cannot grant role %s, above your own role %s", highest, p.Role)}
	}
	if !validKeyName(name) {
		return NewAPIKey{}, fault.Invalidf("name", "must be at most %d characters without control characters", maxKeyNameLen)
	}

	var idb [keyIDBytes]byte
	var secretb [keySecretBytes]byte
	_, _ = rand.Read(idb[:]) // crypto/rand.Read never fails
	_, _ = rand.Read(secretb[:])
	id := hex.EncodeToString(idb[:])
	secret := base64.RawURLEncoding.EncodeToString(secretb[:])
	sum := secretHash(secret)
	rec := apiKeyRecord{
		APIKey: APIKey{
			ID:        id,
			Subject:   sub,
			Name:      name,
			Roles:     norm,
			CreatedAt: s.clock.Now().UTC().Truncate(time.Millisecond),
			CreatedBy: p.Subject,
		},
		SecretSHA256: hex.EncodeToString(sum[:]),
	}
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		exists, err := tx.Records().APIKeyGet(p.Tenant, id, &apiKeyRecord{})
		if err != nil {
			return err
		}
		if exists {
			return errors.New("API key id collision")
		}
		return tx.Records().APIKeyPut(p.Tenant, id, &rec)
	})
	if err != nil {
		return NewAPIKey{}, fmt.Errorf("error creating API key: %w", err)
	}
	return NewAPIKey{APIKey: rec.APIKey, Token: apiKeyPrefix + p.Tenant + "." + id + "." + secret}, nil
}

// ListKeys lists a tenant's keys in id order, starting after the key id
// `after` ("" from the start). limit <= 0 means 100; it is capped at 1000. The
// cursor returned is the `after` of the next page, "" on the last one.
func (s *Service) ListKeys(ctx context.Context, tenant, after string, limit int) ([]APIKey, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	if !validTenant(tenant) {
		return nil, "", invalidTenant(tenant)
	}
	if after != "" && !validKeyID(after) {
		return nil, "", fault.Invalidf("cursor", "invalid cursor")
	}
	if limit <= 0 {
		limit = defaultKeyLimit
	}
	limit = min(limit, maxKeyLimit)
	keys := make([]APIKey, 0, min(limit, 64))
	more := false
	err := s.store.View(func(tx *graphstore.Tx) error {
		return tx.Records().APIKeyList(tenant, after, func(id string, raw []byte) (bool, error) {
			if len(keys) == limit {
				more = true
				return false, nil
			}
			var rec apiKeyRecord
			if _, err := rec.UnmarshalMsg(raw); err != nil {
				return false, fmt.Errorf("error decoding API key %s: %w", id, err)
			}
			keys = append(keys, rec.APIKey)
			return true, nil
		})
	})
	if err != nil {
		return nil, "", fmt.Errorf("error listing API keys: %w", err)
	}
	next := ""
	if more {
		next = keys[len(keys)-1].ID
	}
	return keys, next, nil
}

// DeleteKey erases a key of the tenant; it stops working at once. An unknown
// id is a *fault.NotFound.
func (s *Service) DeleteKey(ctx context.Context, tenant, id string) error {
	if !validTenant(tenant) {
		return invalidTenant(tenant)
	}
	if !validKeyID(id) {
		return &fault.NotFound{What: "token", ID: truncate(id, 64)}
	}
	return s.store.Update(ctx, func(tx *graphstore.Tx) error {
		found, err := tx.Records().APIKeyGet(tenant, id, &apiKeyRecord{})
		if err != nil {
			return fmt.Errorf("error reading API key: %w", err)
		}
		if !found {
			return &fault.NotFound{What: "token", ID: id}
		}
		return tx.Records().APIKeyDelete(tenant, id)
	})
}

// truncate shortens client-supplied text echoed in an error.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
