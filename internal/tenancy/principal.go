package tenancy

// How a principal authenticated (Principal.Via).
const (
	ViaJWT    = "jwt"
	ViaAPIKey = "apikey"
	ViaStatic = "static"
)

// Principal is an authenticated caller. One Principal may serve many
// requests at once (a static token's, or a cached JWT's), so it is never
// changed after it is made.
type Principal struct {
	Tenant  string
	Subject string
	Roles   []string // as granted, normalised: canonical names, no duplicates, weakest first
	Role    Role     // the highest granted
	Via     string   // ViaJWT, ViaAPIKey or ViaStatic
}

// Allows reports whether the principal holds r or a role above it.
func (p *Principal) Allows(r Role) bool {
	return p != nil && r >= RoleReader && p.Role >= r
}

// newPrincipal builds a principal from role names as granted; unknown is the
// first name that is not a role.
func newPrincipal(tenant, subject string, roleNames []string, via string) (p *Principal, unknown string, ok bool) {
	roles, highest, unknown, ok := normaliseRoles(roleNames)
	if !ok {
		return nil, unknown, false
	}
	return &Principal{Tenant: tenant, Subject: subject, Roles: roles, Role: highest, Via: via}, "", true
}

// validTenant reports whether id matches ^[a-z0-9][a-z0-9_-]{0,62}$. It is on
// every request's path, hence no regexp.
func validTenant(id string) bool {
	if len(id) == 0 || len(id) > 63 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// ValidTenant reports whether id is a tenant id a credential may name
// (^[a-z0-9][a-z0-9_-]{0,62}$), for callers that name tenants without one
// (the in-process packages).
func ValidTenant(id string) bool { return validTenant(id) }
