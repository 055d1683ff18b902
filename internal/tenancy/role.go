package tenancy

import (
	"slices"
	"strconv"
	"strings"
)

// Role is what an identity may do. Each role includes the ones before it.
type Role int

// The roles, in increasing order of power. The zero Role grants nothing.
const (
	RoleReader Role = iota + 1
	RoleWorker
	RoleDispatcher
	RoleAdmin
)

var roleNames = [...]string{
	RoleReader:     "reader",
	RoleWorker:     "worker",
	RoleDispatcher: "dispatcher",
	RoleAdmin:      "admin",
}

// ParseRole returns the role named s ("reader", "worker", "dispatcher",
// "admin"; ASCII case is ignored).
func ParseRole(s string) (Role, bool) {
	for r := RoleReader; r <= RoleAdmin; r++ {
		if strings.EqualFold(s, roleNames[r]) {
			return r, true
		}
	}
	return 0, false
}

// String returns the role's name.
func (r Role) String() string {
	if r >= RoleReader && r <= RoleAdmin {
		return roleNames[r]
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}

// defaultRoles is what a credential that names no roles grants.
var defaultRoles = []string{"worker"}

// normaliseRoles turns role names as granted into their canonical names,
// without duplicates, in increasing order of power, and returns the highest.
// It returns the first unknown name when there is one.
func normaliseRoles(names []string) (roles []string, highest Role, unknown string, ok bool) {
	parsed := make([]Role, 0, len(names))
	for _, n := range names {
		r, known := ParseRole(n)
		if !known {
			return nil, 0, n, false
		}
		parsed = append(parsed, r)
	}
	slices.Sort(parsed)
	parsed = slices.Compact(parsed)
	roles = make([]string, len(parsed))
	for i, r := range parsed {
		roles[i] = r.String()
	}
	if len(parsed) > 0 {
		highest = parsed[len(parsed)-1]
	}
	return roles, highest, "", true
}
